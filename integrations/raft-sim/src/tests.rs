//! Tests that drive the target through the `Target` trait, the way the executor does.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use flymc_model::property::Property;
use flymc_model::sets::{Known, SetsFile};
use flymc_model::{
    Event, EventId, EventKind, GlobalState, NodeId, NodeView, PropertyKind, System, Target,
    Violation, Workload,
};
use serde_json::{json, Value};

use crate::properties::{
    CommittedNeverLost, ElectionSafety, EventuallyLeader, LogMatching, StateMachineSafety,
};
use crate::protocol::{Fx, Msg, Raft, RaftNode};
use crate::{Config, RaftSimSystem, MESSAGE_KINDS};

fn workloads_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../workloads/raft-sim")
}

fn load(name: &str) -> Workload {
    Workload::load(&workloads_dir().join(format!("{name}.toml"))).expect("workload loads")
}

/// `load(name)` with `[params] variant` replaced.
fn with_variant(name: &str, variant: &str) -> Workload {
    let mut w = load(name);
    w.params.insert("variant".into(), json!(variant));
    w
}

fn parse(text: &str) -> Workload {
    Workload::parse(Path::new("t.toml"), text).expect("valid toml")
}

/// One choice of a hand-written schedule.
#[derive(Clone, Debug, PartialEq)]
enum Pick {
    /// Oldest pending event with this name and endpoints.
    Ev(&'static str, Option<NodeId>, NodeId),
    Crash(NodeId),
    Reboot(NodeId),
}

use Pick::{Crash, Ev, Reboot};

/// A test-only executor: enables events, checks safety on every state, liveness at the end.
struct Driver {
    target: Box<dyn Target>,
    props: Vec<Box<dyn Property>>,
    states: Vec<GlobalState>,
    log: Vec<String>,
    violation: Option<Violation>,
}

impl Driver {
    fn new(w: &Workload) -> Driver {
        let mut target = RaftSimSystem.target(w).expect("target");
        target.start(w).expect("start");
        let s = target.settle().unwrap();
        let mut d = Driver {
            target,
            props: RaftSimSystem.properties(w),
            states: vec![],
            log: vec![],
            violation: None,
        };
        d.observe(s);
        d
    }

    fn observe(&mut self, s: GlobalState) {
        for p in self.props.iter_mut() {
            if p.kind() == PropertyKind::Safety && self.violation.is_none() {
                if let Err(message) = p.check(&s) {
                    self.violation = Some(Violation {
                        property: p.name().into(),
                        kind: p.kind(),
                        message,
                        step: self.states.len().saturating_sub(1),
                    });
                }
            }
        }
        self.states.push(s);
    }

    fn apply(&mut self, pick: &Pick) {
        match pick {
            Ev(name, from, to) => {
                let e = self
                    .target
                    .pending()
                    .into_iter()
                    .find(|e| e.name == *name && e.from == *from && e.to == *to)
                    .unwrap_or_else(|| {
                        panic!(
                            "{pick:?} is not pending after {:?}; pending: {:?}",
                            self.log,
                            self.target
                                .pending()
                                .iter()
                                .map(Event::describe)
                                .collect::<Vec<_>>()
                        )
                    });
                self.log.push(e.describe());
                self.target.enable(e.id).unwrap();
            }
            Crash(n) => {
                self.log.push(format!("crash n{n}"));
                self.target.crash(*n).unwrap();
            }
            Reboot(n) => {
                self.log.push(format!("reboot n{n}"));
                self.target.reboot(*n).unwrap();
            }
        }
        let s = self.target.settle().unwrap();
        self.observe(s);
    }

    fn run(&mut self, schedule: &[Pick]) {
        for p in schedule {
            self.apply(p);
            if self.violation.is_some() {
                return;
            }
        }
    }

    /// FIFO (oldest pending first, never a fault) until quiescence or a violation.
    fn fifo(&mut self, max: usize) {
        while self.violation.is_none() {
            let Some(e) = self.target.pending().into_iter().next() else {
                return;
            };
            assert!(self.log.len() < max, "no quiescence within {max} events");
            self.log.push(e.describe());
            self.target.enable(e.id).unwrap();
            let s = self.target.settle().unwrap();
            self.observe(s);
        }
    }

    fn liveness(&mut self) -> Result<(), String> {
        let s = self.states.last().unwrap().clone();
        for p in self.props.iter_mut() {
            if p.kind() == PropertyKind::Liveness {
                p.check(&s).map_err(|m| format!("{}: {m}", p.name()))?;
            }
        }
        Ok(())
    }

    fn last(&self) -> &GlobalState {
        self.states.last().unwrap()
    }

    fn events(&self) -> usize {
        self.log.len()
    }
}

fn entries(values: &[(u64, Option<u64>)]) -> Value {
    Value::Array(
        values
            .iter()
            .map(|(t, v)| json!({"term": t, "value": v}))
            .collect(),
    )
}

#[test]
fn update_workloads_under_fifo_replicate_commit_and_apply_everything() {
    for (k, expected_events) in [(1u64, 7usize), (2, 12), (3, 13)] {
        let w = load(&format!("raft-{k}"));
        let mut d = Driver::new(&w);
        d.fifo(w.max_events);
        assert!(d.violation.is_none(), "{:?}", d.violation);
        d.liveness().unwrap();
        let want = entries(&(1..=k).map(|v| (1, Some(v))).collect::<Vec<_>>());
        for i in 0..3 {
            let s = d.last();
            assert_eq!(s.var(i, "log"), Some(&want), "n{i} log");
            assert_eq!(s.var(i, "applied"), Some(&want), "n{i} applied");
            assert_eq!(s.var(i, "commit_index"), Some(&json!(k)), "n{i}");
        }
        assert_eq!(d.events(), expected_events, "raft-{k}: {:#?}", d.log);
        assert!(d.events() * 3 < w.max_events);
    }
}

#[test]
fn leader_election_under_fifo_elects_one_leader_everyone_knows() {
    let w = load("raft-le");
    let mut d = Driver::new(&w);
    d.fifo(w.max_events);
    assert!(d.violation.is_none(), "{:?}", d.violation);
    d.liveness().unwrap();
    let s = d.last();
    let leaders: Vec<usize> = (0..3)
        .filter(|&i| s.var(i, "role") == Some(&json!("leader")))
        .collect();
    assert_eq!(leaders.len(), 1, "{:#?}", d.log);
    let l = leaders[0];
    let term = s.var(l, "current_term").unwrap().as_u64().unwrap();
    let noop = entries(&[(term, None)]);
    for i in 0..3 {
        assert_eq!(s.var(i, "leader"), Some(&json!(l)));
        assert_eq!(s.var(i, "log"), Some(&noop));
        assert_eq!(s.var(i, "applied"), Some(&noop));
    }
    assert!(d.events() * 3 < w.max_events, "{} events", d.events());
    eprintln!("raft-le under FIFO: {} events: {:#?}", d.events(), d.log);
}

#[test]
fn bug_workload_under_fifo_does_not_fail() {
    // FIFO never injects faults: the update is simply replicated.
    let w = load("raft-bug");
    let mut d = Driver::new(&w);
    d.fifo(w.max_events);
    assert!(d.violation.is_none(), "{:?}", d.violation);
    d.liveness().unwrap();
    assert_eq!(d.events(), 7);
}

/// n0 appends value 1 and crashes before it reaches anyone; n1 wins term 2 with n2's vote and
/// commits its no-op at index 1 with n2; n0 reboots; n1's next heartbeat reaches n0.
fn bug_schedule() -> Vec<Pick> {
    vec![
        Ev("update", None, 0),
        Crash(0),
        Ev("election_timeout", None, 2), // n2 notices: it forgets n0 as leader, pre-votes
        Ev("election_timeout", None, 1), // n1 notices too and pre-votes
        Ev("pre_vote", Some(1), 2),
        Ev("pre_vote_response", Some(2), 1), // n1 runs for term 2
        Ev("request_vote", Some(1), 2),
        Ev("request_vote_response", Some(2), 1), // n1 leads term 2: no-op at index 1
        Ev("append_entries", Some(1), 2),
        Ev("append_entries_response", Some(2), 1), // commit index 1, tell n2
        Reboot(0),
        Ev("heartbeat", None, 1),
        Ev("append_entries", Some(1), 0), // prev 1 @ term 2, leader_commit 1
    ]
}

#[test]
fn hand_schedule_reproduces_apply_before_match() {
    let w = load("raft-bug");
    let mut d = Driver::new(&w);
    let schedule = bug_schedule();
    d.run(&schedule);
    let v = d.violation.clone().expect("the bug fires");
    assert_eq!(v.property, "state-machine-safety", "{v}");
    assert_eq!(w.expect.as_deref(), Some("state-machine-safety"));
    assert_eq!(d.events(), schedule.len(), "{:#?}", d.log);
    assert!(v.message.contains("index 1"), "{}", v.message);
    // The request that triggered it is the one the brief describes.
    assert!(
        d.log
            .last()
            .unwrap()
            .contains(r#""prev_log_index":1,"prev_log_term":2"#),
        "{}",
        d.log.last().unwrap()
    );
    assert!(d.log.last().unwrap().contains(r#""leader_commit":1"#));
    assert_eq!(d.last().var(0, "applied"), Some(&entries(&[(1, Some(1))])));
}

#[test]
fn fixed_variant_survives_the_same_schedule() {
    for w in [load("raft-bug-fixed"), with_variant("raft-bug", "fixed")] {
        let mut d = Driver::new(&w);
        d.run(&bug_schedule());
        assert!(d.violation.is_none(), "{:?}", d.violation);
        d.fifo(w.max_events);
        assert!(d.violation.is_none(), "{:?}", d.violation);
        d.liveness().unwrap();
        let s = d.last();
        let noop = entries(&[(2, None)]);
        for i in 0..3 {
            assert_eq!(s.var(i, "log"), Some(&noop), "n{i}: {:#?}", d.log);
            assert_eq!(s.var(i, "applied"), Some(&noop), "n{i}");
            assert_eq!(s.var(i, "leader"), Some(&json!(1)), "n{i}");
        }
    }
}

#[test]
fn runs_are_deterministic() {
    let w = load("raft-bug");
    let run = || {
        let mut d = Driver::new(&w);
        let mut ids = vec![d.target.pending()];
        for p in bug_schedule() {
            d.apply(&p);
            ids.push(d.target.pending());
        }
        let states: Vec<String> = d.states.iter().map(GlobalState::canonical).collect();
        (states, ids, d.violation.map(|v| v.message))
    };
    assert_eq!(run(), run());
}

#[test]
fn bad_params_give_one_line_errors() {
    let base = "version = 1\nsystem = \"raft-sim\"\nmax_events = 50\n";
    let cases = [
        (
            "nodes = 3\n[params]\ninitial_leader = 0\nvariant = \"nope\"",
            "unknown variant `nope`; valid: fixed, bug-apply-before-match",
        ),
        (
            "nodes = 3\n[params]\ninitial_leader = 0\nvariant = 3",
            "params.variant must be a string, got integer `3`",
        ),
        (
            "nodes = 3\n[params]\ninitial_leader = 0\nleader = 1",
            "unknown parameter `leader` in [params]; valid: variant, initial_leader, updates, election_timers",
        ),
        (
            "nodes = 4\n[params]\ninitial_leader = 0",
            "set nodes = 3 (got 4)",
        ),
        (
            "nodes = 3\n[params]\ninitial_leader = 3",
            "param initial_leader must name a node 0..2, got 3",
        ),
        (
            "nodes = 3\n[params]\ninitial_leader = 0\nupdates = \"two\"",
            "params.updates must be a non-negative integer, got string \"two\"",
        ),
        (
            "nodes = 3\n[params]\ninitial_leader = 0\nupdates = 10",
            "param updates must be an integer 0..=9",
        ),
        (
            "nodes = 3\n[params]\nelection_timers = 1",
            "params.election_timers must be an array, got integer `1`",
        ),
        (
            "nodes = 3\n[params]\nelection_timers = [0, 7]",
            "param election_timers must name a node 0..2, got 7",
        ),
        (
            "nodes = 3\n[params]\nupdates = 1\nelection_timers = [0]",
            "param updates needs initial_leader",
        ),
        ("nodes = 3\n", "nobody would ever lead"),
    ];
    for (text, want) in cases {
        let w = parse(&format!("{base}{text}\n"));
        let e = match RaftSimSystem.target(&w) {
            Ok(_) => panic!("accepted: {text}"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains(want), "{e} (wanted {want})");
        assert!(!e.contains('\n'), "{e}");
        // `start` validates too.
        let mut t = RaftSimSystem.target(&load("raft-1")).unwrap();
        assert!(t.start(&w).is_err());
    }
}

#[test]
fn every_shipped_workload_is_accepted() {
    let mut names: Vec<String> = std::fs::read_dir(workloads_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "raft-1",
            "raft-2",
            "raft-3",
            "raft-bug",
            "raft-bug-fixed",
            "raft-le"
        ]
    );
    for n in names {
        let w = load(&n);
        assert_eq!(w.system, RaftSimSystem.name());
        RaftSimSystem.target(&w).unwrap();
    }
}

// ---------------------------------------------------------------------------------------------
// Exhaustive exploration of a workload's state graph (every interleaving, crashes and reboots
// placed as the executor's budgets allow), memoised on (state, property memory, fault budget).
// It runs the handlers on a cloneable copy of what `SimTarget` does (checked against it below).
// Only configurations of a few thousand states are exhausted, so the tests stay quick; bigger
// ones (split votes, the old leader's crash and reboot) get fixed-seed random runs instead.

#[derive(Clone, Default)]
struct Memory {
    election: ElectionSafety,
    sms: StateMachineSafety,
    committed: CommittedNeverLost,
}

impl Memory {
    /// Check `s`; on success the memory has absorbed it.
    fn check(&mut self, s: &GlobalState) -> Result<(), (String, String)> {
        let props: [&mut dyn Property; 4] = [
            &mut self.election,
            &mut LogMatching::default(),
            &mut self.sms,
            &mut self.committed,
        ];
        for p in props {
            p.check(s).map_err(|m| (p.name().to_string(), m))?;
        }
        Ok(())
    }
}

/// A cloneable stand-in for `SimTarget<Raft>` plus the executor's fault budgets.
#[derive(Clone)]
struct Sim<'a> {
    raft: &'a Raft,
    nodes: Vec<RaftNode>,
    alive: Vec<bool>,
    pending: Vec<(EventKind, Option<NodeId>, NodeId, Msg)>,
    crashes_left: u32,
    reboots_left: u32,
}

#[derive(Clone, Debug, PartialEq)]
enum Choice {
    Enable(usize),
    Crash(NodeId),
    Reboot(NodeId),
}

impl<'a> Sim<'a> {
    fn new(raft: &'a Raft, w: &Workload) -> Sim<'a> {
        let mut fx = Fx::default();
        let nodes = raft.init_fx(&mut fx);
        let mut sim = Sim {
            raft,
            alive: vec![true; nodes.len()],
            nodes,
            pending: vec![],
            crashes_left: w.crashes,
            reboots_left: w.reboots,
        };
        sim.absorb(None, fx);
        sim
    }

    fn absorb(&mut self, from: Option<NodeId>, fx: Fx) {
        for (kind, to, msg) in fx.items {
            if self.alive[to] {
                let from = if kind == EventKind::Message {
                    from
                } else {
                    None
                };
                self.pending.push((kind, from, to, msg));
            }
        }
    }

    fn choices(&self, w: &Workload) -> Vec<Choice> {
        let mut c: Vec<Choice> = (0..self.pending.len()).map(Choice::Enable).collect();
        for n in 0..self.nodes.len() {
            if !self.alive[n] {
                if self.reboots_left > 0 {
                    c.push(Choice::Reboot(n));
                }
            } else if self.crashes_left > 0 && w.crash_nodes.contains(&n) {
                c.push(Choice::Crash(n));
            }
        }
        c
    }

    fn describe(&self, c: &Choice) -> String {
        match c {
            Choice::Enable(i) => self.event(i.to_owned()).describe(),
            Choice::Crash(n) => format!("crash n{n}"),
            Choice::Reboot(n) => format!("reboot n{n}"),
        }
    }

    fn event(&self, i: usize) -> Event {
        let (kind, from, to, msg) = &self.pending[i];
        let Value::Object(mut fields) = serde_json::to_value(msg).unwrap() else {
            panic!("messages are objects")
        };
        let name = fields.remove("kind").unwrap().as_str().unwrap().to_string();
        Event {
            id: EventId(i as u64),
            kind: *kind,
            name,
            from: *from,
            to: *to,
            fields,
            parent: None,
            delay_ms: None,
        }
    }

    /// The choice a hand-schedule pick names (the oldest matching pending event).
    fn choice(&self, p: &Pick) -> Choice {
        match *p {
            Crash(n) => Choice::Crash(n),
            Reboot(n) => Choice::Reboot(n),
            Ev(name, from, to) => Choice::Enable(
                (0..self.pending.len())
                    .find(|&i| {
                        let e = self.event(i);
                        e.name == name && e.from == from && e.to == to
                    })
                    .unwrap_or_else(|| panic!("{p:?} is not pending")),
            ),
        }
    }

    /// Take choice `c`; returns how many messages and timers the handler produced.
    fn step(&mut self, c: &Choice) -> usize {
        let mut fx = Fx::default();
        let from = match *c {
            Choice::Enable(i) => {
                let (_, from, to, msg) = self.pending.remove(i);
                self.raft
                    .handle_fx(to, &mut self.nodes[to], from, msg, &mut fx);
                Some(to)
            }
            Choice::Crash(n) => {
                self.crashes_left -= 1;
                self.alive[n] = false;
                self.pending.retain(|p| p.2 != n);
                self.raft.crash_fx(n, &mut self.nodes[n], &mut fx);
                None
            }
            Choice::Reboot(n) => {
                self.reboots_left -= 1;
                self.alive[n] = true;
                self.raft.reboot_fx(n, &mut self.nodes[n], &mut fx);
                Some(n)
            }
        };
        let produced = fx.items.len();
        self.absorb(from, fx);
        produced
    }

    /// A hash of everything that decides the future: nodes, liveness, the pending multiset,
    /// fault budgets and the properties' memory.
    fn key(&self, mem: &Memory) -> u64 {
        use std::hash::{Hash, Hasher};
        let h = |x: &dyn Fn(&mut std::collections::hash_map::DefaultHasher)| {
            let mut s = std::collections::hash_map::DefaultHasher::new();
            x(&mut s);
            s.finish()
        };
        let mut pending: Vec<u64> = self
            .pending
            .iter()
            .map(|p| {
                h(&|s| {
                    format!("{:?}", p.0).hash(s);
                    p.1.hash(s);
                    p.2.hash(s);
                    p.3.hash(s);
                })
            })
            .collect();
        pending.sort_unstable();
        h(&|s| {
            self.nodes.hash(s);
            self.alive.hash(s);
            pending.hash(s);
            (self.crashes_left, self.reboots_left).hash(s);
            mem.election.leaders().hash(s);
            // Which node first applied or committed an entry only shapes messages.
            for (k, (e, _)) in mem.sms.applied() {
                (k, e).hash(s);
            }
            for (k, (e, t, _)) in mem.committed.committed() {
                (k, e, t).hash(s);
            }
        })
    }

    fn state(&self) -> GlobalState {
        let views = self
            .nodes
            .iter()
            .zip(&self.alive)
            .map(|(n, &alive)| NodeView {
                alive,
                vars: match serde_json::to_value(n).unwrap() {
                    Value::Object(m) => m,
                    _ => panic!("nodes are objects"),
                },
            })
            .collect();
        let events: Vec<Event> = (0..self.pending.len()).map(|i| self.event(i)).collect();
        GlobalState::new(views, &events)
    }
}

#[derive(Clone, Copy, Default)]
struct Info {
    /// Maximal paths from here: what plain DFS runs (saturating).
    paths: u64,
    /// Longest path from here.
    depth: u32,
}

#[derive(Default)]
struct Report {
    states: usize,
    /// Violating paths: (property, message, path) of the first few.
    violations: Vec<(String, String, Vec<String>)>,
    /// Quiescent ends without a leader every live node follows, or not fully replicated.
    not_live: Vec<(String, Vec<String>)>,
    /// A path that reached max_events, if any.
    too_long: Option<Vec<String>>,
    root: Info,
}

/// The exhaustive tests stay small; beyond this many states a model change made them slow,
/// which should fail loudly rather than run for minutes.
const STATE_CAP: usize = 20_000;

struct Explorer<'a> {
    w: &'a Workload,
    memo: HashMap<u64, Info>,
    report: Report,
    descr: Vec<String>,
}

impl Explorer<'_> {
    fn explore(&mut self, sim: &Sim, mem: &Memory) -> Info {
        let key = sim.key(mem);
        if let Some(i) = self.memo.get(&key) {
            return *i;
        }
        let s = sim.state();
        self.report.states += 1;
        assert!(
            self.report.states <= STATE_CAP,
            "{}: more than {STATE_CAP} states",
            self.w.name
        );
        if self.descr.len() >= self.w.max_events {
            self.report
                .too_long
                .get_or_insert_with(|| self.descr.clone());
            return Info { paths: 1, depth: 0 };
        }
        let mut mem = mem.clone();
        if let Err((p, m)) = mem.check(&s) {
            if self.report.violations.len() < 5 {
                self.report.violations.push((p, m, self.descr.clone()));
            }
            let i = Info { paths: 1, depth: 0 };
            self.memo.insert(key, i);
            return i;
        }
        if sim.pending.is_empty() {
            if let Err(m) = EventuallyLeader::default()
                .check(&s)
                .and_then(|_| replicated(&s))
            {
                if self.report.not_live.len() < 5 {
                    self.report.not_live.push((m, self.descr.clone()));
                }
            }
        }
        let choices = sim.choices(self.w);
        let mut info = Info {
            paths: u64::from(choices.is_empty()),
            depth: 0,
        };
        for c in choices {
            let mut next = sim.clone();
            self.descr.push(sim.describe(&c));
            next.step(&c);
            let child = self.explore(&next, &mem);
            self.descr.pop();
            info.paths = info.paths.saturating_add(child.paths);
            info.depth = info.depth.max(child.depth + 1);
        }
        self.memo.insert(key, info);
        info
    }
}

#[test]
fn the_explorers_copy_of_the_network_matches_sim_target() {
    let w = load("raft-bug");
    let raft = Raft {
        config: Config::parse(&w).unwrap(),
    };
    let mut sim = Sim::new(&raft, &w);
    let mut d = Driver::new(&w);
    assert_eq!(sim.state(), *d.last());
    for p in bug_schedule() {
        let c = sim.choice(&p);
        sim.step(&c);
        d.apply(&p);
        assert_eq!(sim.state(), *d.last(), "after {p:?}");
    }
}

/// At quiescence with a majority alive: every live node holds the leader's log, all of it
/// committed and applied.
fn replicated(s: &GlobalState) -> Result<(), String> {
    let alive: Vec<usize> = (0..s.nodes.len()).filter(|&i| s.nodes[i].alive).collect();
    if alive.len() * 2 <= s.nodes.len() {
        return Ok(());
    }
    let l = alive
        .iter()
        .copied()
        .find(|&i| s.var(i, "role") == Some(&json!("leader")))
        .ok_or("no leader")?;
    let log = s.var(l, "log").unwrap();
    let n = log.as_array().unwrap().len();
    for &i in &alive {
        if s.var(i, "log") != Some(log)
            || s.var(i, "applied") != Some(log)
            || s.var(i, "commit_index") != Some(&json!(n))
        {
            return Err(format!(
                "n{i} log {} applied {} commit {} vs leader n{l} log {log}",
                s.var(i, "log").unwrap(),
                s.var(i, "applied").unwrap(),
                s.var(i, "commit_index").unwrap()
            ));
        }
    }
    Ok(())
}

fn exhaust(w: &Workload) -> Report {
    let raft = Raft {
        config: Config::parse(w).unwrap(),
    };
    let mut x = Explorer {
        w,
        memo: HashMap::new(),
        report: Report::default(),
        descr: vec![],
    };
    let root = x.explore(&Sim::new(&raft, w), &Memory::default());
    x.report.root = root;
    x.report
}

/// Safe on every path, every path ends quiescent before max_events, and every quiescent end
/// has a leader all live nodes follow with everything replicated.
fn assert_clean(name: &str, w: &Workload, r: &Report) {
    assert!(r.too_long.is_none(), "{name}: {:#?}", r.too_long);
    assert!(r.violations.is_empty(), "{name}: {:#?}", r.violations);
    assert!(r.not_live.is_empty(), "{name}: {:#?}", r.not_live);
    assert!((r.root.depth as usize) < w.max_events, "{name}");
}

#[test]
fn update_workloads_exhaustively_safe_and_replicated() {
    let mut dfs_paths = vec![];
    for k in 1..=3 {
        let name = format!("raft-{k}");
        let w = load(&name);
        let r = exhaust(&w);
        assert_clean(&name, &w, &r);
        dfs_paths.push(r.root.paths);
    }
    // raft-1: after the update, one causal chain per follower (append_entries, its reply, the
    // commit notice): C(6, 3) = 20 interleavings.
    assert_eq!(dfs_paths[0], 20);
    // raft-3 is the benchmark that plain DFS cannot exhaust within 10,000 paths.
    assert!(dfs_paths[2] > 10_000, "{dfs_paths:?}");
}

/// Elections from scratch with one initial timer (two timers, which can split the vote, are
/// too many states for a quick exhaustive test and get random runs below).
#[test]
fn single_timer_elections_exhaustively_live() {
    for timers in [json!([0]), json!([2])] {
        let mut w = load("raft-le");
        w.params.insert("election_timers".into(), timers.clone());
        let r = exhaust(&w);
        assert_clean(&format!("raft-le {timers}"), &w, &r);
    }
}

/// Any one node crashes for good (the leader holding an unreplicated entry, or a follower):
/// the other two keep or elect a leader and replicate. And a follower that crashes and
/// reboots catches up.
#[test]
fn crash_workloads_exhaustively_safe_and_live() {
    let mut any_node = load("raft-bug-fixed");
    any_node.reboots = 0;
    any_node.crash_nodes = vec![0, 1, 2];
    let mut follower = load("raft-bug-fixed");
    follower.crash_nodes = vec![1];
    for (name, w) in [
        ("one crash of any node", any_node),
        ("follower crash and reboot", follower),
    ] {
        let r = exhaust(&w);
        assert_clean(name, &w, &r);
    }
}

/// How one random run ended (the reason is the last line of its path).
#[derive(Debug, PartialEq)]
enum Walk {
    /// Quiescent with a leader all live nodes follow and the log replicated.
    Done,
    /// A safety property failed.
    Violated(String),
    /// Quiescent without a leader all live nodes follow, or not replicated.
    NotLive,
    /// No quiescence within max_events.
    TooLong,
}

/// Uniformly random runs from a fixed-seed xorshift (deterministic), with their paths.
fn random_walks(w: &Workload, walks: usize, seed: u64) -> Vec<(Walk, Vec<String>)> {
    random_walks_after(w, &[], walks, seed)
}

/// Random runs that start with the hand-picked `prefix`.
fn random_walks_after(
    w: &Workload,
    prefix: &[Pick],
    walks: usize,
    seed: u64,
) -> Vec<(Walk, Vec<String>)> {
    let raft = Raft {
        config: Config::parse(w).unwrap(),
    };
    let mut rng = seed.max(1);
    let mut next = move |n: usize| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % n as u64) as usize
    };
    (0..walks)
        .map(|_| {
            let mut sim = Sim::new(&raft, w);
            let mut mem = Memory::default();
            let mut path = vec![];
            for p in prefix {
                mem.check(&sim.state()).unwrap();
                let c = sim.choice(p);
                path.push(sim.describe(&c));
                sim.step(&c);
            }
            let end = loop {
                let s = sim.state();
                if let Err((p, m)) = mem.check(&s) {
                    path.push(format!("{p}: {m}"));
                    break Walk::Violated(p);
                }
                let choices = sim.choices(w);
                if sim.pending.is_empty() {
                    if let Err(m) = EventuallyLeader::default()
                        .check(&s)
                        .and_then(|_| replicated(&s))
                    {
                        path.push(m);
                        break Walk::NotLive;
                    }
                    if choices.is_empty() {
                        break Walk::Done;
                    }
                }
                if path.len() >= w.max_events {
                    break Walk::TooLong;
                }
                let c = &choices[next(choices.len())];
                path.push(sim.describe(c));
                sim.step(c);
            };
            (end, path)
        })
        .collect()
}

#[test]
fn random_runs_with_split_votes_and_reboots_stay_safe_and_live() {
    let mut two = load("raft-le");
    two.params.insert("election_timers".into(), json!([0, 1]));
    let mut three = load("raft-le");
    three
        .params
        .insert("election_timers".into(), json!([0, 1, 2]));
    let mut twice = load("raft-bug-fixed");
    twice.crashes = 2;
    twice.reboots = 2;
    twice.crash_nodes = vec![0, 1, 2];
    for (name, w) in [
        ("raft-le with 2 timers", two),
        ("raft-le with 3 timers", three),
        ("raft-bug-fixed", load("raft-bug-fixed")),
        (
            "raft-bug-fixed with 2 crashes and reboots of any nodes",
            twice,
        ),
        ("raft-3", load("raft-3")),
    ] {
        for (end, path) in random_walks(&w, 150, 0x9e37_79b9_7f4a_7c15) {
            assert_eq!(end, Walk::Done, "{name}: {path:#?}");
        }
    }
}

/// Random runs of the bug workload from the moment both survivors noticed the crash of the old
/// leader holding an unreplicated entry (they ignore its late append_entries from then on):
/// some break state-machine safety, nothing else ever breaks, and the fixed variant survives
/// the same runs.
#[test]
fn random_runs_break_only_state_machine_safety_and_only_with_the_bug() {
    let seed = 0x2545_f491_4f6c_dd1d;
    let crashed = &bug_schedule()[..4];
    let bug = random_walks_after(&load("raft-bug"), crashed, 200, seed);
    let mut found = 0;
    for (end, path) in &bug {
        match end {
            Walk::Done => {}
            Walk::Violated(p) if p == "state-machine-safety" => found += 1,
            _ => panic!("raft-bug: {end:?} {path:#?}"),
        }
    }
    assert!(found > 0, "no random run of raft-bug found the bug");
    for (end, path) in random_walks_after(&with_variant("raft-bug", "fixed"), crashed, 200, seed) {
        assert_eq!(end, Walk::Done, "fixed: {path:#?}");
    }
}

#[test]
fn eventually_leader_is_judged_only_at_a_quiescent_end() {
    let w = load("raft-le");
    let d = Driver::new(&w);
    let mut s = d.last().clone();
    // Nobody leads yet, but election timers are pending (as when a run stops at the event
    // limit): no violation can be claimed.
    assert!(!s.network.is_empty());
    EventuallyLeader::default().check(&s).unwrap();
    // The same state with nothing left to happen is a violation.
    s.network.clear();
    let e = EventuallyLeader::default().check(&s).unwrap_err();
    assert!(e.contains("none leads"), "{e}");
    // With a majority down there is nothing to claim.
    s.nodes[0].alive = false;
    s.nodes[1].alive = false;
    EventuallyLeader::default().check(&s).unwrap();
    // A leader some live node does not follow.
    let mut d = Driver::new(&load("raft-1"));
    d.run(&[Crash(1)]);
    let mut s = d.last().clone();
    s.network.clear();
    EventuallyLeader::default().check(&s).unwrap();
    s.nodes[2].vars.insert("leader".into(), Value::Null);
    let e = EventuallyLeader::default().check(&s).unwrap_err();
    assert!(e.contains("n2 (term 1) knows no leader"), "{e}");
}
#[test]
fn sets_file_names_every_kind_field_and_var() {
    let sets: Value = serde_json::from_str(RaftSimSystem.about().sets.as_deref().unwrap()).unwrap();
    assert_eq!(sets["format"], "flymc-sets");
    assert_eq!(sets["version"], 1);
    assert_eq!(sets["system"], RaftSimSystem.name());
    // node_vars are exactly the serialised state's keys.
    let w = load("raft-1");
    let mut t = RaftSimSystem.target(&w).unwrap();
    t.start(&w).unwrap();
    let s = t.settle().unwrap();
    let mut vars: Vec<&str> = s.nodes[0].vars.keys().map(String::as_str).collect();
    let mut declared: Vec<&str> = sets["node_vars"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    vars.sort();
    declared.sort();
    assert_eq!(vars, declared);
    // Every message kind with its fields, from one instance of each.
    use crate::protocol::Entry;
    let e = vec![Entry {
        term: 1,
        value: None,
    }];
    let samples = [
        Msg::RequestVote {
            term: 0,
            last_log_index: 0,
            last_log_term: 0,
        },
        Msg::RequestVoteResponse {
            term: 0,
            granted: true,
            rival: false,
            last_log_index: 0,
            last_log_term: 0,
        },
        Msg::AppendEntries {
            term: 0,
            prev_log_index: 0,
            prev_log_term: 0,
            entries: e,
            leader_commit: 0,
        },
        Msg::AppendEntriesResponse {
            term: 0,
            success: true,
            index: 0,
            commit_index: 0,
        },
        Msg::PreVote {
            term: 0,
            last_log_index: 0,
            last_log_term: 0,
        },
        Msg::PreVoteResponse {
            term: 0,
            granted: true,
        },
        Msg::ElectionTimeout {
            crashed: None,
            crashed_term: 0,
            crashed_incarnation: 0,
        },
        Msg::Heartbeat {
            peer: 0,
            incarnation: 1,
        },
        Msg::Update { value: 1 },
    ];
    let messages = sets["messages"].as_object().unwrap();
    assert_eq!(messages.len(), samples.len());
    let mut kinds: Vec<&str> = messages.keys().map(String::as_str).collect();
    let mut declared_kinds = MESSAGE_KINDS.to_vec();
    kinds.sort();
    declared_kinds.sort();
    assert_eq!(kinds, declared_kinds, "message_kinds() lists every kind");
    let is_var = |v: &Value| declared.contains(&v.as_str().unwrap());
    for m in samples {
        let Value::Object(mut o) = serde_json::to_value(&m).unwrap() else {
            panic!()
        };
        let kind = o.remove("kind").unwrap();
        let spec = &messages[kind.as_str().unwrap()];
        let mut fields: Vec<&String> = o.keys().collect();
        fields.sort();
        let mut listed: Vec<String> = spec["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        listed.sort();
        assert_eq!(fields, listed.iter().collect::<Vec<_>>(), "{kind} fields");
        let entries = spec["entries"].as_array().unwrap();
        assert!(!entries.is_empty(), "{kind}");
        assert_eq!(
            entries.last().unwrap()["guard"],
            "true",
            "{kind} ends with a catch-all"
        );
        for en in entries {
            for key in ["read", "update", "send", "increments"] {
                for v in en[key].as_array().unwrap() {
                    assert!(is_var(v), "{kind}: {key} names unknown var {v}");
                }
            }
            for v in en["increments"].as_array().unwrap() {
                assert!(en["update"].as_array().unwrap().contains(v), "{kind}");
            }
            assert!(en["disk"].is_array());
            let g = en["guard"].as_str().unwrap();
            for word in g.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.')) {
                if let Some(v) = word.strip_prefix("n.") {
                    assert!(declared.contains(&v), "{kind}: guard reads unknown n.{v}");
                }
                if let Some(f) = word.strip_prefix("m.") {
                    assert!(
                        listed.iter().any(|l| l == f),
                        "{kind}: guard reads unknown m.{f}"
                    );
                }
            }
        }
    }
    for hook in ["crash", "reboot"] {
        for en in sets[hook].as_array().unwrap() {
            for key in ["update", "peer_update"] {
                for v in en[key].as_array().unwrap() {
                    assert!(is_var(v), "{hook}: {key} names unknown var {v}");
                }
            }
        }
    }
}

fn sets_file() -> SetsFile {
    let w = load("raft-1");
    let mut t = RaftSimSystem.target(&w).unwrap();
    t.start(&w).unwrap();
    let known = Known {
        node_vars: Some(t.settle().unwrap().nodes[0].vars.keys().cloned().collect()),
        message_kinds: Some(
            RaftSimSystem
                .about()
                .message_kinds
                .iter()
                .flatten()
                .cloned()
                .collect(),
        ),
    };
    SetsFile::parse(
        "sets.json",
        RaftSimSystem.about().sets.as_deref().unwrap(),
        &known,
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// flymc's own reader accepts the file against the variables and kinds the system has, and
/// picks the entries one expects.
#[test]
fn sets_file_parses_with_the_model_reader() {
    let sets = sets_file();
    let w = load("raft-1");
    let mut d = Driver::new(&w);
    let s = d.last().clone();
    let fields = |m: &Msg| match serde_json::to_value(m).unwrap() {
        Value::Object(mut o) => {
            o.remove("kind");
            o
        }
        _ => unreachable!(),
    };
    let update = fields(&Msg::Update { value: 1 });
    // A client update at a follower is dropped; at the leader it appends.
    assert!(sets
        .message("update", &s.nodes[1].vars, &update)
        .unwrap()
        .changes_nothing());
    let e = sets.message("update", &s.nodes[0].vars, &update).unwrap();
    assert!(e.update.contains("log") && e.disk.contains("log"));
    // A reply from the leader's term that commits, then the same reply again.
    d.run(&[Ev("update", None, 0), Ev("append_entries", Some(0), 1)]);
    let reply = fields(&Msg::AppendEntriesResponse {
        term: 1,
        success: true,
        index: 1,
        commit_index: 0,
    });
    let e = sets
        .message("append_entries_response", &d.last().nodes[0].vars, &reply)
        .unwrap();
    assert!(e.update.contains("commit_index"));
    d.run(&[Ev("append_entries_response", Some(1), 0)]);
    let e = sets
        .message("append_entries_response", &d.last().nodes[0].vars, &reply)
        .unwrap();
    assert!(!e.update.contains("commit_index"));
}

/// The file checked against the handlers on random runs: the entry flymc picks (the first
/// whose guard holds) names every variable the event changed and the persistent files it
/// wrote, and says `"emits": false` only where the handler sends nothing.
#[test]
fn sets_file_entries_cover_what_handlers_do() {
    let sets = sets_file();
    let mut two = load("raft-bug-fixed");
    two.crashes = 2;
    two.reboots = 2;
    two.crash_nodes = vec![0, 1, 2];
    let mut three = load("raft-le");
    three
        .params
        .insert("election_timers".into(), json!([0, 1, 2]));
    let mut checked = HashMap::<String, usize>::new();
    for w in [load("raft-3"), three, load("raft-bug"), two] {
        let raft = Raft {
            config: Config::parse(&w).unwrap(),
        };
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..150 {
            let mut sim = Sim::new(&raft, &w);
            loop {
                let choices = sim.choices(&w);
                if choices.is_empty() || sim.pending.len() > 60 {
                    break;
                }
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let c = choices[(rng % choices.len() as u64) as usize].clone();
                let before = sim.state();
                let (hook, to, fields) = match &c {
                    Choice::Enable(i) => {
                        let e = sim.event(*i);
                        (e.name.clone(), e.to, e.fields.clone())
                    }
                    Choice::Crash(n) => ("crash".to_string(), *n, Default::default()),
                    Choice::Reboot(n) => ("reboot".to_string(), *n, Default::default()),
                };
                let produced = sim.step(&c);
                let after = sim.state();
                let (a, b) = (&before.nodes[to].vars, &after.nodes[to].vars);
                let changed: Vec<&String> = a.keys().filter(|k| a[*k] != b[*k]).collect();
                // Nothing changes at the other nodes: peers learn of faults through timers.
                for i in (0..3).filter(|&i| i != to) {
                    assert_eq!(before.nodes[i].vars, after.nodes[i].vars, "{hook}");
                }
                let (update, disk, emits) = if hook == "crash" || hook == "reboot" {
                    let f = sets.fault(hook == "reboot", a).expect("fault entry");
                    (&f.update, None, true)
                } else {
                    let e = sets.message(&hook, a, &fields).expect("some entry applies");
                    (&e.update, Some(&e.disk), e.emits)
                };
                for k in &changed {
                    assert!(
                        update.contains(*k),
                        "{hook} at n{to} {fields:?} changed {k}; the entry's update set is {update:?}"
                    );
                }
                if let Some(disk) = disk {
                    if changed
                        .iter()
                        .any(|k| *k == "current_term" || *k == "voted_for")
                    {
                        assert!(disk.contains("hard_state"), "{hook} {fields:?}");
                    }
                    if changed.iter().any(|k| *k == "log") {
                        assert!(disk.contains("log"), "{hook} {fields:?}");
                    }
                }
                assert!(
                    emits || produced == 0,
                    "{hook} at n{to} {fields:?} sent {produced} but its entry says it emits nothing"
                );
                *checked.entry(hook).or_default() += 1;
            }
        }
    }
    // Every kind of event was exercised.
    for kind in MESSAGE_KINDS {
        assert!(
            checked.get(kind).is_some_and(|&n| n > 10),
            "{kind}: {checked:?}"
        );
    }
}

#[test]
fn symmetry_identifies_mirrored_followers() {
    let w = load("raft-1");
    let sym = RaftSimSystem.symmetry(&w);
    assert_eq!(sym.groups, vec![vec![0, 1, 2]]);
    let reach = |first: NodeId| {
        let mut d = Driver::new(&w);
        d.run(&[
            Ev("update", None, 0),
            Ev("append_entries", Some(0), first),
            Ev("append_entries_response", Some(first), 0),
        ]);
        d.last().clone()
    };
    let (a, b) = (reach(1), reach(2));
    assert_ne!(a.hash(), b.hash());
    assert_eq!(sym.abstract_state(&a).hash, sym.abstract_state(&b).hash);
    // Progress to different peers is not confused: n1 acked in both, n2 acked in one.
    let mut d = Driver::new(&w);
    d.run(&[
        Ev("update", None, 0),
        Ev("append_entries", Some(0), 1),
        Ev("append_entries", Some(0), 2),
        Ev("append_entries_response", Some(1), 0),
    ]);
    assert_ne!(
        sym.abstract_state(d.last()).hash,
        sym.abstract_state(&a).hash
    );
    for name in ["raft-le", "raft-bug", "raft-bug-fixed"] {
        assert!(
            RaftSimSystem.symmetry(&load(name)).groups.is_empty(),
            "{name}"
        );
    }
}
