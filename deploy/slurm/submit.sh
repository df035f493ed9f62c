#!/usr/bin/env bash
# Submits a sharded `flymc hunt` to Slurm: a job array of SHARDS tasks (hunt.sbatch), and the
# merge (merge.sbatch) queued behind it with --dependency=afterany. Run it from cron on a
# login node for a nightly hunt:
#   HUNT_DIR=/shared/flymc-hunt FLYMC=/shared/bin/flymc deploy/slurm/submit.sh
# Prints the two job ids (`array_job=ID`, `merge_job=ID`); the reports land in
# HUNT_DIR/merged, each job's output in HUNT_DIR/logs.
#
# Environment, all optional:
#   FLYMC        the flymc binary, as the compute nodes see it         (default: flymc on PATH)
#   HUNT_ARGS    what to hunt, without --shard/--out/--corpus
#                (default: --system raft-sim --strategy dfs --budget 30m)
#   SHARDS       how many array tasks (shards)                         (default: 4)
#   HUNT_DIR     a folder on storage every node sees                   (default: ./flymc-hunt)
#   CORPUS       the persistent corpus of findings                     (default: HUNT_DIR/corpus)
#   HUNT_SBATCH_ARGS  more sbatch options for both jobs, split on blanks
#                (e.g. "--partition=batch --time=01:00:00"); sbatch's own SBATCH_* variables
#                work too.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

FLYMC=${FLYMC:-flymc}
# A relative path to the binary means one relative to here, not to the job's working folder.
case $FLYMC in
    */*) FLYMC=$(realpath -- "$FLYMC") ;;
esac
HUNT_ARGS=${HUNT_ARGS:---system raft-sim --strategy dfs --budget 30m}
SHARDS=${SHARDS:-4}
HUNT_DIR=$(realpath -m -- "${HUNT_DIR:-$PWD/flymc-hunt}")
CORPUS=$(realpath -m -- "${CORPUS:-$HUNT_DIR/corpus}")
HUNT_SBATCH_ARGS=${HUNT_SBATCH_ARGS:-}
export FLYMC HUNT_ARGS SHARDS HUNT_DIR CORPUS

case $SHARDS in
    '' | *[!0-9]* | 0) echo "submit.sh: SHARDS must be a positive number, not '$SHARDS'" >&2; exit 2 ;;
esac
mkdir -p -- "$HUNT_DIR/logs"

# --parsable prints "jobid" or "jobid;cluster".
# shellcheck disable=SC2086
array=$(sbatch --parsable --array="0-$((SHARDS - 1))" --chdir="$HUNT_DIR" \
    --output="$HUNT_DIR/logs/shard-%a.out" $HUNT_SBATCH_ARGS "$here/hunt.sbatch")
array=${array%%;*}
# shellcheck disable=SC2086
merge=$(sbatch --parsable --dependency="afterany:$array" --chdir="$HUNT_DIR" \
    --output="$HUNT_DIR/logs/merge.out" $HUNT_SBATCH_ARGS "$here/merge.sbatch")
merge=${merge%%;*}

echo "array_job=$array"
echo "merge_job=$merge"
