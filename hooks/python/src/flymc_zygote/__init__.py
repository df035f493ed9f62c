"""Start a Python node program from a warm interpreter (a zygote) instead of a fresh one.

    python3 -c 'from flymc_zygote import main; main()' [--preload MOD[,MOD...]] -- SCRIPT [ARG...]

(or `python3 -m flymc_zygote ...`, which costs `runpy` on every start) runs `python3 SCRIPT
ARG...`, but the interpreter that runs SCRIPT was forked from a zygote that
has already started and imported MOD (and `flymc_hook`): flymc starts every node of every path,
and a fresh interpreter importing a library costs tens of milliseconds of each. What the child
does is what a fresh start does: it takes this process's argv, environment, working directory
and standard streams, puts SCRIPT's folder first on `sys.path`, runs SCRIPT as `__main__` and
ends the way the interpreter would (threads joined, `atexit`, the same exit status, or death by
the same signal, passed back to this process).

One zygote per flymc process, Python executable, preload list, SCRIPT and environment (the
`FLYMC_*` variables aside, which differ per node): started by the first node that needs it, it
ends when that flymc process ends, however it ends. Its children join the process group of the
process flymc started, so a crash (SIGKILL to that group) kills the child too; should the child
miss it (the launcher killed while the child was being forked), the zygote kills it when the
launcher's connection closes. Nothing outlives flymc.

What stays deterministic: the zygote imports MOD once, with the `FLYMC_*` variables removed
from its environment, and runs nothing else; every child starts from that same state. So MOD
must not read per-node state at import (the environment, the working directory, the clock) and
must not start threads. The hash seed is the zygote's, which is this process's
(`PYTHONHASHSEED` is part of the environment that chooses the zygote).

Without a zygote (`FLYMC_ZYGOTE=0`; a node started as the first process of a PID namespace, as
flymc does for CRIU snapshots; a process that does not lead its process group; no `pidfd_open`)
SCRIPT runs in this process, as it would in a fresh interpreter.
"""


def main() -> None:
    """The launcher's entry point: arguments from `sys.argv[1:]`; ends the interpreter."""
    import sys

    from . import _launch

    try:
        preload, argv = _launch.parse(sys.argv[1:])
    except _launch.Usage as e:
        sys.stderr.write(f"flymc_zygote: {e}\n")
        sys.exit(2)
    # A normal exit after the script: the interpreter joins threads, runs `atexit` and
    # flushes, as after a fresh `python3 SCRIPT`.
    sys.exit(_launch.run(_launch.launch(preload, argv)))
