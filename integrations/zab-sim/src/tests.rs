//! The twin driven step by step through the `Target` trait (ZOOKEEPER-4643's schedule, what a
//! crash loses and a reboot reads), the shipped workloads, and search through flymc's
//! explorer.

use std::path::{Path, PathBuf};

use flymc_model::{Event, GlobalState, NodeId, Property, System, Target, Workload};
use serde_json::Value;

use crate::view::ACKED_IN_LATER_LEADERS;
use crate::ZabSimSystem;

fn workload_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../workloads/zab-sim")
        .join(format!("{name}.toml"))
}

fn workload(name: &str) -> Workload {
    Workload::load(&workload_path(name)).expect("workload parses")
}

/// A run driven by the test, every state checked against every property.
struct Drive {
    target: Box<dyn Target>,
    props: Vec<Box<dyn Property>>,
    state: GlobalState,
    /// The first violation: (property, message).
    violation: Option<(String, String)>,
    /// One line per step: the event, then every node's role, epoch and tree.
    trace: Vec<String>,
}

impl Drive {
    fn new(w: &Workload) -> Drive {
        let mut target = ZabSimSystem.target(w).expect("target");
        target.start(w).expect("start");
        let state = target.settle().expect("settle");
        Drive {
            target,
            props: ZabSimSystem.properties(w),
            state,
            violation: None,
            trace: Vec::new(),
        }
    }

    fn check(&mut self, what: String) {
        self.state = self.target.settle().expect("settle");
        let roles: Vec<String> = (0..self.state.nodes.len())
            .map(|n| {
                format!(
                    "n{n} {} e{} {:?}",
                    self.var(n, "state").as_str().unwrap_or("?"),
                    self.var(n, "currentEpoch"),
                    self.zxids(n, "log")
                )
            })
            .collect();
        self.trace
            .push(format!("{what:50} | {}", roles.join(" | ")));
        for p in &mut self.props {
            if p.kind() != flymc_model::PropertyKind::Safety {
                continue;
            }
            if let Err(m) = p.check(&self.state) {
                self.violation.get_or_insert((p.name().to_string(), m));
            }
        }
    }

    fn trace(&self) -> String {
        self.trace.join("\n")
    }

    fn var(&self, n: NodeId, k: &str) -> Value {
        self.state.nodes[n]
            .vars
            .get(k)
            .cloned()
            .unwrap_or(Value::Null)
    }

    fn zxids(&self, n: NodeId, k: &str) -> Vec<u64> {
        serde_json::from_value(self.var(n, k)).unwrap_or_default()
    }

    fn disk_log(&self, n: NodeId) -> Vec<u64> {
        serde_json::from_value(self.var(n, "disk")["txnlog"].clone()).unwrap()
    }

    /// Deliver pending events oldest first, skipping those `hold` names and the initLimit
    /// timeouts (a network that answers never reaches them), until none is left.
    fn fifo(&mut self, hold: impl Fn(&Event) -> bool) {
        let timeout = |e: &Event| e.name == "read-timeout" || e.name == "epoch-wait";
        for _ in 0..1000 {
            let pending = self.target.pending().into_iter();
            let Some(e) = pending.filter(|e| !timeout(e)).find(|e| !hold(e)) else {
                return;
            };
            self.target.enable(e.id).expect("enable");
            let from = e.from.map(|f| format!("n{f}->")).unwrap_or_default();
            let fields = serde_json::to_string(&e.fields).unwrap();
            self.check(format!("{} {from}n{} {fields}", e.name, e.to));
        }
        panic!("the schedule did not settle in 1000 events");
    }

    fn crash(&mut self, n: NodeId) {
        self.target.crash(n).expect("crash");
        self.check(format!("crash n{n}"));
    }

    fn reboot(&mut self, n: NodeId) {
        self.target.reboot(n).expect("reboot");
        self.check(format!("reboot n{n}"));
    }
}

fn is(e: &Event, name: &str, to: NodeId) -> bool {
    e.name == name && e.to == to
}

/// ZOOKEEPER-4643's schedule (docs/shared benchmarks; n0 = S1, n1 = S2, n2 = S3): all three
/// commit W1; n0 crashes; n2 leads with n1 and commits W2 (acknowledged); n1 crashes and n2
/// steps down; n0 reboots, n2 leads the next epoch and DIFF-syncs W2 to n0, whose flush never
/// comes; n0 crashes; n2 crashes; n0 and n1 reboot and elect.
/// Returns the run and n0's currentEpoch file as its second crash left it.
fn schedule_4643(w: &Workload) -> (Drive, Value) {
    let mut d = Drive::new(w);
    let writes: Vec<_> = d
        .target
        .pending()
        .into_iter()
        .filter(|e| e.name == "write")
        .collect();
    let second = writes[1].id;
    d.fifo(|e| e.id == second);
    assert_eq!(d.zxids(0, "log"), vec![1 << 32 | 1], "W1 reached n0");
    d.crash(0);
    d.fifo(|_| false);
    let w2 = 1 << 32 | 2;
    assert_eq!(
        d.zxids(2, "acked"),
        vec![1 << 32 | 1, w2],
        "W2 was acknowledged"
    );
    d.crash(1);
    d.fifo(|_| false);
    assert_eq!(d.var(2, "state"), "LOOKING", "n2 lost its quorum");
    d.reboot(0);
    d.fifo(|e| is(e, "disk:txnlog", 0));
    d.crash(0);
    let epoch = d.var(0, "disk")["currentEpoch"].clone();
    d.crash(2);
    d.reboot(0);
    d.reboot(1);
    d.fifo(|_| false);
    (d, epoch)
}

#[test]
fn the_4643_schedule_loses_an_acknowledged_write_in_3_8_0() {
    let (d, epoch) = schedule_4643(&workload("zk-4643"));
    assert_eq!(epoch, 2, "n0 wrote epoch 2 before W2 reached its disk");
    let (property, message) = d
        .violation
        .clone()
        .unwrap_or_else(|| panic!("no violation:\n{}", d.trace()));
    assert_eq!(property, ACKED_IN_LATER_LEADERS, "{message}");
    assert!(message.contains("0x100000002"), "{message}");
    assert_eq!(d.var(0, "state"), "LEADING", "n0 won on its epoch");
}

#[test]
fn the_4643_schedule_loses_nothing_with_the_fixed_order() {
    let (d, epoch) = schedule_4643(&workload("zk-4643-fixed"));
    assert_eq!(d.violation, None, "{}", d.trace());
    assert_eq!(epoch, 1, "n0 waits for its flush before it writes epoch 2");
    // n1, with W2, wins and leads.
    assert_eq!(d.var(1, "state"), "LEADING", "{}", d.trace());
    assert!(d.zxids(1, "log").contains(&(1 << 32 | 2)));
}

#[test]
fn a_crash_loses_the_writes_that_were_not_flushed() {
    let mut d = Drive::new(&workload("zab-1txn-crash"));
    // n0 never flushes: it logs W1 and acknowledges nothing.
    d.fifo(|e| is(e, "disk:txnlog", 0));
    let w1 = 1 << 32 | 1;
    assert_eq!(d.zxids(0, "log"), vec![w1], "committed in n0's memory");
    assert_eq!(d.disk_log(0), Vec::<u64>::new());
    d.crash(0);
    d.reboot(0);
    assert_eq!(
        d.zxids(0, "log"),
        Vec::<u64>::new(),
        "gone with the process"
    );
    assert_eq!(d.var(0, "currentEpoch"), 1, "the epoch files were written");
}

#[test]
fn a_reboot_recovers_the_flushed_log_and_the_epochs_from_their_files() {
    let mut d = Drive::new(&workload("zab-1txn-crash"));
    d.fifo(|_| false);
    let w1 = 1 << 32 | 1;
    assert_eq!(d.disk_log(0), vec![w1]);
    d.crash(0);
    d.reboot(0);
    assert_eq!(d.zxids(0, "log"), vec![w1]);
    assert_eq!(d.var(0, "currentEpoch"), 1);
    assert_eq!(d.var(0, "acceptedEpoch"), 1);
    d.fifo(|_| false);
    assert_eq!(d.var(0, "state"), "FOLLOWING", "it rejoins n2's ensemble");
    assert_eq!(d.var(0, "established"), true);
}

#[test]
fn every_shipped_workload_fits_the_system() {
    let dir = workload_path("x").parent().unwrap().to_path_buf();
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let w = Workload::load(&e.unwrap().path()).expect("parses");
        ZabSimSystem::protocol(&w).unwrap_or_else(|e| panic!("{}: {e}", w.name));
        n += 1;
    }
    assert!(n >= 4);
}

#[test]
fn a_bad_variant_is_one_line_that_names_the_valid_ones() {
    let text = std::fs::read_to_string(workload_path("zk-4643"))
        .unwrap()
        .replace("clients =", "variant = \"3.9\"\nclients =");
    let w = Workload::parse(&workload_path("zk-4643"), &text).unwrap();
    let e = ZabSimSystem::protocol(&w).err().unwrap().to_string();
    assert!(
        e.contains("unknown variant `3.9`; valid: 3.8.0, fixed"),
        "{e}"
    );
}

/// ZOOKEEPER-4643 as `faults` places it: seven faults, each a plan `faults` queues from the run
/// before (a fault the executor offers at one of its crash points: right after a node's write,
/// or at rest), everything else in the default order. Two strike mid-stretch, right after one
/// of n0's writes; five at the end of a run. So the bug is inside the fault search's space at
/// depth seven; what keeps the search from it is the order it goes through that space in.
#[test]
fn the_4643_chain_is_seven_placements_of_the_fault_search() {
    use flymc_core::executor::{Executor, RunOptions};
    use flymc_core::plan::Plan;
    use flymc_core::run::Run;
    use flymc_core::CrashPoints;
    use flymc_model::EventKind;

    let w = workload("zk-4643");
    let exec = Executor::new(&ZabSimSystem, &w).crash_points(CrashPoints::AfterWrites);
    let run = |plan: &Plan| -> Run {
        let mut t = ZabSimSystem.target(&w).expect("target");
        exec.run(t.as_mut(), plan, RunOptions::default())
            .expect("run")
    };
    let show = |r: &Run| -> String {
        r.events()
            .map(|e| format!("{} n{}", e.name, e.to))
            .collect::<Vec<_>>()
            .join(", ")
    };
    // Where: right after n0's first write of this kind in the plan's tail, or at the end.
    let at = |plan: &Plan, r: &Run, after: Option<&str>| -> Option<usize> {
        let tail = plan.prefix.len();
        match after {
            None => Some(r.steps.len()),
            Some(name) => r.steps[tail..]
                .iter()
                .position(|s| s.event().name == name && s.event().to == 0)
                .map(|i| tail + i + 1),
        }
    };
    let mut plan = Plan::fifo(Vec::new());
    let mut r = run(&plan);
    let chain: [(EventKind, NodeId, Option<&str>); 7] = [
        // n0 has W1 on disk, not W2: n2 and n1 commit W2 without it.
        (EventKind::Crash, 0, Some("disk:txnlog")),
        // n2 is left without a quorum; n0 comes back, n2 leads it and DIFF-syncs W2.
        (EventKind::Crash, 1, None),
        (EventKind::Reboot, 0, None),
        // n0 writes the new epoch and crashes before W2 reaches its disk.
        (EventKind::Crash, 0, Some("disk:currentEpoch")),
        (EventKind::Crash, 2, None),
        // n0, on the newer epoch, wins over n1 and truncates W2 from it.
        (EventKind::Reboot, 0, None),
        (EventKind::Reboot, 1, None),
    ];
    for (k, (kind, node, after)) in chain.into_iter().enumerate() {
        assert_eq!(r.violation, None, "after {k} faults: {}", show(&r));
        let i = at(&plan, &r, after).unwrap_or_else(|| panic!("no {after:?} in {}", show(&r)));
        let offered = match r.steps.get(i) {
            Some(s) => &s.enabled,
            None => &r.final_enabled,
        };
        let fault = offered
            .iter()
            .find(|e| e.event.kind == kind && e.event.to == node)
            .unwrap_or_else(|| panic!("{kind:?} n{node} not offered at step {i} of {}", show(&r)));
        let mut prefix = r.event_ids()[..i].to_vec();
        prefix.push(fault.event.id);
        plan = Plan::fifo(prefix);
        r = run(&plan);
    }
    let v = r
        .violation
        .clone()
        .unwrap_or_else(|| panic!("no violation: {}", show(&r)));
    assert_eq!(v.property, ACKED_IN_LATER_LEADERS, "{}", v.message);
    assert!(v.message.contains("0x100000002"), "{}", v.message);
}

#[test]
fn a_node_whose_epoch_is_older_than_its_log_refuses_to_start_as_3_8_0_does() {
    use flymc_model::sim::Protocol;
    let p = ZabSimSystem::protocol(&workload("zk-4643-fixed")).unwrap();
    let mut node = crate::state::Node::new(0, 0);
    assert_eq!(p.refuses_start(0, &node), None, "a first start");
    // PR 2028's order logs the DIFF's transactions before the new epoch: a crash between the
    // two leaves epoch 1's write on a disk whose currentEpoch is still 0.
    node.disk.txnlog = vec![1 << 32 | 1];
    let why = p.refuses_start(0, &node).expect("refuses");
    assert!(
        why.contains("The current epoch, 0x0, is older than the last zxid, 4294967297"),
        "{why}"
    );
    node.disk.current_epoch = 1;
    let why = p.refuses_start(0, &node).expect("refuses");
    assert!(
        why.contains("The accepted epoch, 0x0 is less than the current epoch, 0x1"),
        "{why}"
    );
    node.disk.accepted_epoch = 1;
    assert_eq!(p.refuses_start(0, &node), None);
}
