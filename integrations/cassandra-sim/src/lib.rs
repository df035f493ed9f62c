//! `cassandra-sim`: Cassandra 2.0 Paxos (lightweight transactions) simulated in memory.
//!
//! Cassandra cannot be installed where flymc is developed, so its Paxos is a deterministic
//! benchmark fixture that follows the rules file `/work/shared/benchmarks/cassandra-paxos.md`
//! (Cassandra 2.0.0's `PaxosState` and `StorageProxy.cas()`), with its four bugs as switches.
//!
//! # Model
//! * Three replicas n0..n2, one row. Each node is a replica (a `system.paxos` row and the user
//!   table's row, both persistent) and a CAS coordinator (volatile). A node coordinates one CAS at
//!   a time; client requests that arrive meanwhile are queued in order.
//! * Events: the client request `cas` (from `init`, one per operation) and the messages
//!   `prepare`, `prepare_response`, `propose`, `propose_response`, `commit`, `commit_response`.
//!   Every message is intercepted, including a coordinator's messages to itself. The coordinator
//!   waits for two commit acks before it goes on or returns.
//! * Ballots come from the environment's clock in the order prepare rounds start (`Env` is
//!   [`protocol::Clock`]), so starting a round at one node does not commute with starting one
//!   at another (`sets.json` declares the clock `shared`, which makes them dependent). Every
//!   write carries its ballot as timestamp; per column the newest wins (on a
//!   tie a tombstone wins).
//! * The quorum read of the row is not a message: each promise carries the replica's data row as
//!   it was when it promised, and the coordinator reads the newest value per column from the
//!   two promises that formed its quorum. (A read right after the prepare quorum, as Cassandra
//!   does, observes those replicas no earlier than that.)
//! * A handler that throws in the real code (the 2.0.0 loader meeting a `system.paxos` row
//!   without `in_progress_ballot`) counts in the replica's `failures` and sends no reply; a
//!   commit has applied its mutation by then.
//! * A coordinator gives up with a timeout (outcome unknown) when it would start prepare round
//!   number `max_attempts + 1` for one operation (default 3): Cassandra's CAS contention
//!   timeout, which also keeps contended runs finite.
//! * A crash loses the coordinator's state: its clients (running, queued, or whose request is
//!   still in flight and now lost) are told "unknown". Messages it already sent stay in flight.
//!
//! # Variants (`[params] variant`)
//! Each bug variant is `fixed` with one issue put back to its 2.0.0 code, so that its workload
//! shows that bug and no other:
//!
//! | variant | 5925 | 6023 | 6013 | CASS-5 |
//! | --- | --- | --- | --- | --- |
//! | `fixed` | fixed | fixed | fixed | fixed |
//! | `bug-5925` | 2.0.0 | 2.0.0 | fixed | fixed |
//! | `bug-6023` | fixed | 2.0.0 | fixed | fixed |
//! | `bug-6013` | fixed | fixed | 2.0.0 | fixed |
//! | `bug-cass5` | fixed | fixed | fixed | 2.0.0 |
//! | `2.0.0` | 2.0.0 | 2.0.0 | 2.0.0 | 2.0.0 |
//!
//! `bug-5925` also needs the 2.0.0 paxos row (6023 = 2.0.0): only its loader throws on a row
//! without a ballot, the 6023 fix's loader tolerates one. In the `cass-3` workload the 2.0.0 row
//! cannot show CASS-1, whose replay of a stale value only hurts when another operation wrote
//! the same columns in between, and `cass-3`'s two operations write different columns.
//! With the 6023 fix the 5925 switch has no effect (the fixed `propose` writes only the accepted
//! proposal, as the rules file says, and the fixed loader accepts a missing promise).
//!
//! # Parameters
//! ```toml
//! [params]
//! variant = "bug-6023"        # fixed | bug-5925 | bug-6013 | bug-6023 | bug-cass5 | 2.0.0
//! max_attempts = 3            # optional: prepare rounds per operation before a timeout
//! row = { owner = "user_1" }  # optional: the row's initial columns
//! [[params.ops]]              # one CAS per entry, op ids 0, 1, ... in this order
//! node = 0                    # its coordinator
//! set = { v1 = "A" }          # UPDATE ... SET v1 = 'A'
//! if = { owner = "user_1" }   # optional: IF owner = 'user_1' (absent: always applies)
//! ```
//!
//! # Properties
//! * `no-handler-failure` (safety): no replica handler threw.
//! * `applied-false-not-committed` (safety): no client told `applied = false` has its write
//!   applied by a commit on any replica (checked on every state, so a commit landing after the
//!   answer is caught too).
//! * `serializable-result` (safety, evaluated only on states where every client has its answer
//!   and no message is in flight): the row (newest value per column over all replicas) equals
//!   the result of some serial execution, from the initial row, of a sequence of CAS operations
//!   that contains every operation told `applied = true` (its condition holding at its place),
//!   every operation told `applied = false` (its condition failing at its place), and any
//!   subset of the operations with an unknown outcome.
//! * `replicas-converge` (safety, evaluated on the same states): all live replicas hold the same
//!   row values. Without crashes every commit reaches every replica, so only CASS-5 breaks it;
//!   with crashes it is not a Paxos guarantee even when fixed (a replica that was down for a
//!   whole commit and is never in a later prepare quorum is only healed by repair, which is not
//!   modelled), so `fixed` can break it under some crash timings.
//!
//! # Symmetry
//! All three nodes are interchangeable: nothing depends on the value of a node id (replicas are
//! addressed as "all", ties between replies go to the first to arrive, ballots come from the
//! shared clock). A node's state includes the operations it coordinates, so a renaming of nodes
//! carries their operations along and stays a true symmetry; in practice it merges states only
//! of nodes with the same operations (n1 and n2 when all operations run at n0). With faults, the
//! workload's `crash_nodes` form a role of their own: only they may crash. The only node
//! reference in a state is `first_from`; no message field holds a node id.

pub mod protocol;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::LazyLock;

use flymc_model::property::{safety, Property};
use flymc_model::sim::SimTarget;
use flymc_model::{About, GlobalState, Symmetry, System, Target, TargetError, Workload};
use serde::Deserialize;
use serde_json::{Map, Value};

use protocol::{merge_rows, values, Cassandra, Config, OpSpec, Outcome, Row, Switches, REPLICAS};

/// The system flymc checks as `cassandra-sim`.
pub struct CassandraSimSystem;

/// The variants, by their `[params] variant` names.
pub const VARIANTS: [&str; 6] = [
    "fixed",
    "bug-5925",
    "bug-6013",
    "bug-6023",
    "bug-cass5",
    "2.0.0",
];

/// The switches of a variant, or `None` for an unknown name.
pub fn switches(variant: &str) -> Option<Switches> {
    let none = Switches::default();
    Some(match variant {
        "fixed" => none,
        "bug-5925" => Switches {
            bug_5925: true,
            bug_6023: true,
            ..none
        },
        "bug-6013" => Switches {
            bug_6013: true,
            ..none
        },
        "bug-6023" => Switches {
            bug_6023: true,
            ..none
        },
        "bug-cass5" => Switches {
            bug_cass5: true,
            ..none
        },
        "2.0.0" => Switches {
            bug_5925: true,
            bug_6023: true,
            bug_6013: true,
            bug_cass5: true,
        },
        _ => return None,
    })
}

const DEFAULT_MAX_ATTEMPTS: u32 = 3;

fn bad(msg: String) -> TargetError {
    TargetError::Workload(msg)
}

/// The workload parameters (see the module docs).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Params {
    variant: String,
    max_attempts: u32,
    row: BTreeMap<String, String>,
    /// `None` apart from empty, for its own message.
    ops: Option<Vec<OpSpec>>,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            variant: "fixed".into(),
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            row: BTreeMap::new(),
            ops: None,
        }
    }
}

/// Parse and validate the workload's parameters.
pub fn config(w: &Workload) -> Result<Config, TargetError> {
    if w.nodes != REPLICAS {
        return Err(bad(format!(
            "cassandra-sim needs nodes = {REPLICAS}, but the workload has nodes = {}",
            w.nodes
        )));
    }
    let p: Params = w.params()?;
    let sw = switches(&p.variant).ok_or_else(|| {
        bad(format!(
            "unknown variant `{}`; valid: {}",
            p.variant,
            VARIANTS.join(", ")
        ))
    })?;
    if !(1..=100).contains(&p.max_attempts) {
        return Err(bad(
            "params.max_attempts must be an integer from 1 to 100".into()
        ));
    }
    let Some(ops) = p.ops else {
        return Err(bad(
            "params.ops must list the CAS operations, e.g. [[params.ops]] node = 0, set = { v1 = \"A\" }, if = { owner = \"user_1\" }".into(),
        ));
    };
    if ops.is_empty() {
        return Err(bad(
            "params.ops is empty; give at least one operation".into()
        ));
    }
    for (i, o) in ops.iter().enumerate() {
        if o.node >= REPLICAS {
            return Err(bad(format!(
                "params.ops[{i}].node must be a node index 0..{}",
                REPLICAS - 1
            )));
        }
        if o.set.is_empty() {
            return Err(bad(format!("params.ops[{i}].set writes no column")));
        }
    }
    Ok(Config {
        sw,
        ops,
        row: p.row,
        max_attempts: p.max_attempts,
    })
}

impl System for CassandraSimSystem {
    fn about(&self) -> &About {
        static ABOUT: LazyLock<About> = LazyLock::new(|| {
            About::new(
                "cassandra-sim",
                "Cassandra 2.0 Paxos (lightweight transactions), simulated; bugs CASS-1/2/3 (6023, 6013, 5925) and CASS-5",
            )
            // The replica kinds as `flymc analyze` finds them in Cassandra 2.0.0's paxos
            // package, the coordinator kinds kept from the hand-written sets.json (ANALYSIS.md).
            .sets(include_str!("../sets-analysed.json"))
            .message_kinds(&[
                "cas",
                "prepare",
                "prepare_response",
                "propose",
                "propose_response",
                "commit",
                "commit_response",
            ])
            .sources(&["integrations/cassandra-sim/src/lib.rs"])
        });
        &ABOUT
    }

    fn target(&self, workload: &Workload) -> Result<Box<dyn Target>, TargetError> {
        let cfg = config(workload)?;
        Ok(Box::new(SimTarget::new(Cassandra { cfg })))
    }

    fn properties(&self, workload: &Workload) -> Vec<Box<dyn Property>> {
        // target() reports a bad workload; the properties then have nothing to check against.
        let ops = config(workload).map(|c| (c.ops, c.row)).unwrap_or_default();
        properties(ops.0, ops.1)
    }

    /// One role for all replicas; with faults, the nodes that may crash form a role apart from
    /// the others (the crash budget names nodes, so renaming across the two is no symmetry).
    fn symmetry(&self, workload: &Workload) -> Symmetry {
        let all: Vec<usize> = (0..REPLICAS).collect();
        let faults = workload.crashes > 0 || workload.reboots > 0;
        let groups = if faults {
            let (may, may_not): (Vec<usize>, Vec<usize>) =
                all.iter().partition(|n| workload.crash_nodes.contains(n));
            [may, may_not]
                .into_iter()
                .filter(|g| !g.is_empty())
                .collect()
        } else {
            vec![all]
        };
        Symmetry {
            groups,
            ..Symmetry::none()
        }
        .with_refs(&["first_from"], &[])
    }
}

// ------------------------------------------------------------------------------- properties

fn node_results(state: &GlobalState) -> BTreeMap<usize, Outcome> {
    let mut out = BTreeMap::new();
    for n in &state.nodes {
        if let Some(Value::Array(rs)) = n.vars.get("results") {
            for r in rs {
                let op = r.get("op").and_then(Value::as_u64);
                let outcome = match r.get("outcome").and_then(Value::as_str) {
                    Some("applied") => Some(Outcome::Applied),
                    Some("not_applied") => Some(Outcome::NotApplied),
                    Some("unknown") => Some(Outcome::Unknown),
                    _ => None,
                };
                if let (Some(op), Some(o)) = (op, outcome) {
                    out.insert(op as usize, o);
                }
            }
        }
    }
    out
}

fn node_row(vars: &Map<String, Value>) -> Row {
    serde_json::from_value(vars.get("data").cloned().unwrap_or(Value::Null)).unwrap_or_default()
}

/// Every client has its answer and nothing is in flight.
fn quiescent(state: &GlobalState, n_ops: usize) -> bool {
    state.network.is_empty() && node_results(state).len() == n_ops
}

fn show(row: &BTreeMap<String, String>) -> String {
    let cols: Vec<String> = row.iter().map(|(c, v)| format!("{c}={v}")).collect();
    format!("{{{}}}", cols.join(", "))
}

/// Can some serial execution of the operations explain `target` and the clients' answers?
fn serializable(
    ops: &[OpSpec],
    outcomes: &BTreeMap<usize, Outcome>,
    row: &BTreeMap<String, String>,
    used: &mut Vec<bool>,
    target: &BTreeMap<String, String>,
) -> bool {
    let required_done = (0..ops.len()).all(|o| {
        used[o]
            || !matches!(
                outcomes.get(&o),
                Some(Outcome::Applied | Outcome::NotApplied)
            )
    });
    if required_done && row == target {
        return true;
    }
    for o in 0..ops.len() {
        if used[o] {
            continue;
        }
        let holds = ops[o].applies(row);
        let next = match outcomes.get(&o) {
            Some(Outcome::Applied) if !holds => continue,
            Some(Outcome::NotApplied) if holds => continue,
            _ if holds => {
                let mut r = row.clone();
                r.extend(ops[o].set.clone());
                r
            }
            _ => row.clone(),
        };
        used[o] = true;
        let ok = serializable(ops, outcomes, &next, used, target);
        used[o] = false;
        if ok {
            return true;
        }
    }
    false
}

/// The four properties, fresh.
pub fn properties(ops: Vec<OpSpec>, row: BTreeMap<String, String>) -> Vec<Box<dyn Property>> {
    let n_ops = ops.len();
    vec![
        safety("no-handler-failure", |s: &GlobalState| {
            for (i, n) in s.nodes.iter().enumerate() {
                let f = n.vars.get("failures").and_then(Value::as_u64).unwrap_or(0);
                if f > 0 {
                    return Err(format!(
                        "a handler on n{i} threw: it loaded a system.paxos row that has no in_progress_ballot"
                    ));
                }
            }
            Ok(())
        }),
        safety("applied-false-not-committed", |s: &GlobalState| {
            let results = node_results(s);
            for (i, n) in s.nodes.iter().enumerate() {
                let Some(Value::Array(c)) = n.vars.get("committed") else {
                    continue;
                };
                for op in c.iter().filter_map(Value::as_u64) {
                    if results.get(&(op as usize)) == Some(&Outcome::NotApplied) {
                        return Err(format!(
                            "operation {op}'s client was told applied = false, but n{i} committed its write"
                        ));
                    }
                }
            }
            Ok(())
        }),
        safety("serializable-result", move |s: &GlobalState| {
            if !quiescent(s, n_ops) {
                return Ok(());
            }
            let outcomes = node_results(s);
            let rows: Vec<Row> = s.nodes.iter().map(|n| node_row(&n.vars)).collect();
            let fin = values(&merge_rows(&rows));
            let mut used = vec![false; n_ops];
            if serializable(&ops, &outcomes, &row, &mut used, &fin) {
                return Ok(());
            }
            let told: Vec<String> = outcomes
                .iter()
                .map(|(o, r)| {
                    format!(
                        "op{o}={}",
                        match r {
                            Outcome::Applied => "applied",
                            Outcome::NotApplied => "not applied",
                            Outcome::Unknown => "unknown",
                        }
                    )
                })
                .collect();
            Err(format!(
                "the final row {} is not the result of any serial order of the operations ({})",
                show(&fin),
                told.join(", ")
            ))
        }),
        safety("replicas-converge", move |s: &GlobalState| {
            if !quiescent(s, n_ops) {
                return Ok(());
            }
            let live: Vec<(usize, BTreeMap<String, String>)> = s
                .nodes
                .iter()
                .enumerate()
                .filter(|(_, n)| n.alive)
                .map(|(i, n)| (i, values(&node_row(&n.vars))))
                .collect();
            for w in live.windows(2) {
                if w[0].1 != w[1].1 {
                    return Err(format!(
                        "all operations finished, but n{} holds {} and n{} holds {}",
                        w[0].0,
                        show(&w[0].1),
                        w[1].0,
                        show(&w[1].1)
                    ));
                }
            }
            Ok(())
        }),
    ]
}
