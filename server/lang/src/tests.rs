//! The language's tests: guards, conditions and history built-ins, parsed and judged.
use serde_json::{json, Map, Value};

use crate::parse::{depth, parse_as, Mode};
use crate::*;

/// A node of a test's global state.
#[derive(Clone)]
struct N {
    alive: bool,
    vars: Map<String, Value>,
}

impl Node for N {
    fn alive(&self) -> bool {
        self.alive
    }
    fn vars(&self) -> &Map<String, Value> {
        &self.vars
    }
}

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

#[test]
fn parses_and_evaluates_the_papers_example() {
    let g = parse(r#"m.type == "PROP" && m.ballot > n.ballot"#).unwrap();
    let n = obj(json!({"ballot": 3}));
    assert!(g.holds(&n, &obj(json!({"type": "PROP", "ballot": 4}))));
    assert!(!g.holds(&n, &obj(json!({"type": "PROP", "ballot": 3}))));
    assert!(!g.holds(&n, &obj(json!({"type": "RESP", "ballot": 9}))));
}

#[test]
fn precedence_arithmetic_len_and_nesting() {
    let g = parse("!(n.a + 1 >= 3) || len(n.log) == 2 && n.x.y == null").unwrap();
    assert!(g.holds(&obj(json!({"a": 1})), &Map::new()));
    assert!(g.holds(&obj(json!({"a": 5, "log": [1, 2]})), &Map::new()));
    assert!(!g.holds(&obj(json!({"a": 5, "log": [1]})), &Map::new()));
    assert!(parse("-n.a < 0")
        .unwrap()
        .holds(&obj(json!({"a": 2})), &Map::new()));
}

#[test]
fn errors_name_the_column() {
    assert_eq!(parse("m.ballot > ").unwrap_err().column, 12);
    assert_eq!(parse("m.ballot >> 1").unwrap_err().column, 11);
    assert!(parse("x.ballot")
        .unwrap_err()
        .message
        .contains("unknown name"));
    assert!(parse("\"open")
        .unwrap_err()
        .message
        .contains("unterminated"));
    assert!(parse("n").is_err());
}

/// A property with `n` nested parentheses around `n0.x == 1`.
fn nested(n: usize) -> String {
    format!("{}n0.x == 1{}", "(".repeat(n), ")".repeat(n))
}

/// Run `f` on a thread with a small stack (256 KiB), as flymc's worker threads might have:
/// recursion proportional to the input overflows it.
fn small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}

#[test]
fn nesting_deeper_than_the_limit_is_a_syntax_error_at_its_column() {
    let ok = Condition::parse_property(&nested(MAX_NESTING)).unwrap();
    assert!(ok.holds(&state(&[(true, json!({"x": 1}))])));
    // The issue's reproduction: 5,000 nested parentheses.
    let e = small_stack(|| Condition::parse_property(&nested(5000)).unwrap_err());
    assert_eq!(e.column, MAX_NESTING + 1, "{e}");
    assert!(e.message.contains("nested more than 64 deep"), "{e}");
    let calls = format!("{}n.x{}", "len(".repeat(200), ")".repeat(200));
    assert!(small_stack(move || parse(&calls).unwrap_err())
        .message
        .contains("nested"));
}

#[test]
fn long_runs_and_chains_parse_and_evaluate_without_deep_recursion() {
    let s = state(&[(true, json!({"x": 1, "ok": true}))]);
    // The issue's reproductions: 100,000 `!`, and a flat 4,000-term `||` chain (77 KB).
    let nots = format!("{}n0.ok", "!".repeat(100_000));
    let ors = vec!["n0.x == 2"; 4000].join(" || ") + " || n0.x == 1";
    let ands = vec!["n0.ok"; 5000].join(" && ");
    let sum = vec!["n0.x"; 5000].join(" + ") + " - 4999 == 1";
    let minus = vec!["n0.x"; 4001].join(" - ") + " == -3999";
    let negs = format!("{}n0.x == 1", "-".repeat(100_000));
    let (held, failed) = small_stack(move || {
        let held = [ors, ands, sum, minus, negs.clone(), nots.clone()]
            .iter()
            .map(|c| Condition::parse_property(c).unwrap().holds(&s))
            .collect::<Vec<_>>();
        let failed = [nots.replacen('!', "", 1), negs.replacen('-', "", 1)]
            .iter()
            .map(|c| Condition::parse_property(c).unwrap().holds(&s))
            .collect::<Vec<_>>();
        (held, failed)
    });
    assert_eq!(held, [true; 6]);
    assert_eq!(failed, [false; 2]);
    // A run of `!` keeps its meaning: an odd one negates, an even one still needs a boolean.
    let n = obj(json!({"ok": false, "x": 1}));
    assert!(parse("!!!n.ok").unwrap().holds(&n, &Map::new()));
    assert!(!parse("!!n.ok").unwrap().holds(&n, &Map::new()));
    assert!(parse("!!n.x").unwrap().eval(&n, &Map::new()).is_err());
    // Short chains keep their written shape.
    assert_eq!(
        parse("n.a - n.b + n.c").unwrap().to_string(),
        "((n.a - n.b) + n.c)"
    );
}

#[test]
fn the_deepest_expression_the_limits_allow_evaluates_on_a_default_thread() {
    // Every level as deep as short chains make it: `||`, `&&` and `+` chains of 8 terms,
    // `!!`, `--` and a comparison, 64 levels in parentheses.
    let level = |inner: String| {
        format!(
            "(!!--{inner}{} == 0{}{})",
            " + 1".repeat(7),
            " && true".repeat(7),
            " || false".repeat(7)
        )
    };
    let text = (0..MAX_NESTING).fold("1".to_string(), |inner, _| level(inner));
    let c = Condition::parse_property(&text).unwrap();
    assert!(depth(&c.expr) > 26 * MAX_NESTING, "{}", depth(&c.expr));
    assert!(!c.holds(&state(&[(true, json!({}))])));
}

#[test]
fn integer_overflow_is_an_evaluation_error() {
    let n = obj(json!({"x": i64::MAX, "y": i64::MIN}));
    for g in ["n.x + 1 > 0", "n.y - 1 < 0", "-n.y > 0"] {
        assert!(parse(g).unwrap().eval(&n, &Map::new()).is_err(), "{g}");
    }
}

#[test]
fn type_errors_do_not_hold() {
    let g = parse("n.a > 1").unwrap();
    assert!(!g.holds(&obj(json!({"a": "x"})), &Map::new()));
    assert!(g.eval(&obj(json!({"a": "x"})), &Map::new()).is_err());
}

#[test]
fn collects_variables() {
    let g = parse("m.b > n.p && n.q.r == m.c").unwrap();
    let mut v = Vec::new();
    g.vars(Scope::Node, &mut v);
    assert_eq!(v, vec!["p", "q"]);
}

fn state(nodes: &[(bool, Value)]) -> Vec<N> {
    nodes
        .iter()
        .map(|(alive, v)| N {
            alive: *alive,
            vars: obj(v.clone()),
        })
        .collect()
}

#[test]
fn conditions_read_nodes_by_number_and_over_all_nodes() {
    let s = state(&[
        (true, json!({"state": "LEADING", "epoch": 2})),
        (true, json!({"state": "FOLLOWING", "epoch": 2})),
        (false, json!({"state": "FOLLOWING", "epoch": 1})),
    ]);
    let holds = |c: &str| Condition::parse(c).unwrap().holds(&s);
    assert!(holds(r#"n1.state == "FOLLOWING""#));
    // A down node's last report is not its state: only `alive` is known.
    assert!(!holds(r#"n2.state == "FOLLOWING""#));
    assert!(holds("!n2.alive && n2.epoch == null"));
    assert!(holds(r#"any(n.state == "LEADING")"#));
    assert!(!holds("all(n.epoch == 2)"));
    assert!(holds("all(!n.alive || n.epoch == 2)"));
    // A node the body cannot be evaluated for does not satisfy it.
    assert!(holds("any(n.epoch > 1)"));
    assert!(!holds("all(n.epoch > 1)"));
    // A node the state does not have is down.
    assert!(holds("!n7.alive"));
    // Counting, and uniqueness per key (null keys and values ignored).
    assert!(holds(r#"count(n.state == "FOLLOWING") == 1"#));
    assert!(holds(r#"count(n.alive) == 2 && count(n.epoch == 3) == 0"#));
    assert!(holds("unique(n.state per n.missing)"));
    assert!(!holds("unique(n.state per n.epoch)"));
    assert!(holds("unique(n.epoch per n.state)"));
    let e = Condition::parse("unique(n.a n.b)").unwrap_err();
    assert_eq!(
        (e.column, e.message.as_str()),
        (12, "expected `per` (unique(VALUE per KEY))")
    );
    assert!(parse("count(n.a) == 1").is_err());
    let c = Condition::parse("n2.a == 1 || any(n0.b == n.c) && n5.d").unwrap();
    assert_eq!(c.nodes(), vec![0, 2, 5]);
    assert_eq!(
        serde_json::to_value(&c).unwrap(),
        json!("n2.a == 1 || any(n0.b == n.c) && n5.d")
    );
    let back: Condition = serde_json::from_value(json!("n1.x == 1")).unwrap();
    assert!(back == Condition::parse("n1.x == 1").unwrap());
}

#[test]
fn conditions_name_what_they_cannot_read() {
    let e = Condition::parse("n.state == 1").unwrap_err();
    assert_eq!(e.column, 1);
    assert!(e.message.contains("only inside any"), "{e}");
    assert!(Condition::parse("m.x == 1")
        .unwrap_err()
        .message
        .contains("no message"));
    assert!(Condition::parse("nx.state")
        .unwrap_err()
        .message
        .contains("unknown name `nx`"));
    assert!(Condition::parse("any(n.x == 1").is_err());
    // Guards keep their own language.
    assert!(parse("n0.x == 1").is_err());
    assert!(parse("any(n.x == 1)").is_err());
    assert!(serde_json::from_value::<Condition>(json!("n.x")).is_err());
}

#[test]
fn summaries_name_their_parameters_and_nothing_else() {
    let ps = ["a".to_string(), "b".to_string()];
    let e = parse_summary("a.ballot > b.ballot", &ps).unwrap();
    assert_eq!(e.to_string(), "($0.ballot > $1.ballot)");
    assert_eq!(parse_summary("a", &ps).unwrap().to_string(), "$0");
    let err = parse_summary("a.ballot > n.ballot", &ps).unwrap_err();
    assert_eq!(err.column, 12);
    assert!(err.message.contains("the parameters a, b"), "{err}");
    // A guard still needs `.name` after `n`, and cannot evaluate a parameter.
    assert!(parse("n").is_err());
    assert!(e.eval(&Map::new(), &Map::new()).is_err());
}

#[test]
fn ids_take_and_where() {
    let s = state(&[
        (
            true,
            json!({"role": "leader", "term": 2, "log": [1, 2, 3], "commit": 2}),
        ),
        (false, json!({"role": "leader", "term": 2})),
        (
            true,
            json!({"role": "follower", "term": 2, "log": [1, 2], "commit": 5}),
        ),
    ]);
    let holds = |c: &str| Condition::parse(c).unwrap().holds(&s);
    // `n.id` is the node's number, down or not; `nK.id` is K.
    assert!(holds("count(n.id >= 0) == 3 && n1.id == 1 && n9.id == 9"));
    assert!(holds(r#"all(n.id != 2 || n.role == "follower")"#));
    assert!(holds("any(!n.alive && n.id == 1)"));
    // take: the first K, all if shorter, null reads [].
    assert!(holds("take(n0.log, n0.commit) == take(n2.log, 2)"));
    assert!(holds(
        "len(take(n2.log, n2.commit)) == 2 && take(n1.log, 3) == take(n2.log, 0)"
    ));
    assert!(holds("len(take(n0.log, 0 - 1)) == 0"));
    assert!(!holds("take(n0.term, 1) == null"));
    assert!(!holds("len(take(n0.log, n0.role)) == 0"));
    assert!(Condition::parse("take(n0.log 1)").is_err());
    assert!(parse("take(n.log, 1) == null").is_err());
    // where: only nodes where it holds count (n1 is down: it reads null).
    assert!(!holds("unique(n.id per n.term)"));
    assert!(holds(r#"unique(n.id per n.term where n.role == "leader")"#));
    assert!(!holds(
        r#"unique(n.id per n.term where n.role != "candidate")"#
    ));
    let c = Condition::parse(r#"unique(n.id per n.term where n.role == "leader")"#).unwrap();
    assert_eq!(
        c.expr.to_string(),
        r#"unique(n.id per n.term where (n.role == "leader"))"#
    );
    assert_eq!(c.vars(), vec!["role", "term"]);
    let c = Condition::parse_property(
        "n3.alive && kept(take(n.log, n.commit) at n.term in n.log where n.leader.x == n2.id) && ever_agree(n.applied)",
    )
    .unwrap();
    assert_eq!(c.vars(), vec!["applied", "commit", "leader", "log", "term"]);
    assert_eq!(c.nodes(), vec![2, 3]);
}

/// Node views from `(alive, vars)`, for a run's states.
fn run(states: &[Vec<(bool, Value)>]) -> Vec<Vec<N>> {
    states.iter().map(|s| state(s)).collect()
}

/// The result of checking each state in order with one memory.
fn verdicts(c: &str, states: &[Vec<N>]) -> Vec<Result<(), String>> {
    let c = Condition::parse_property(c).unwrap();
    let mut memory = Memory::default();
    states.iter().map(|s| c.check(s, &mut memory)).collect()
}

#[test]
fn ever_unique_remembers_leaders_of_earlier_states() {
    let leader = |term: i64| json!({"role": "leader", "term": term});
    let follower = |term: i64| json!({"role": "follower", "term": term});
    let states = run(&[
        vec![(true, leader(1)), (true, follower(1)), (true, follower(1))],
        // n0 crashes: it is no longer judged, but its leadership of term 1 is remembered.
        vec![(false, leader(1)), (true, follower(1)), (true, follower(1))],
        vec![(false, json!({})), (true, leader(2)), (true, follower(2))],
        // A second leader of term 1, in a later state.
        vec![(false, json!({})), (true, leader(2)), (true, leader(1))],
        vec![(false, json!({})), (true, leader(2)), (true, follower(2))],
    ]);
    let p = r#"ever_unique(n.id per n.term where n.role == "leader")"#;
    let v = verdicts(p, &states);
    assert!(v[..3].iter().all(|r| r.is_ok()), "{v:?}");
    // The conflict is the run's for good; the message says who and what.
    assert_eq!(
        v[3].as_ref().unwrap_err(),
        &format!("`{p}` does not hold: n2 has n.id = 2 where n.term = 1, but n0 had 0 earlier in the run")
    );
    assert!(v[4].is_err());
    // One state alone sees no conflict; `unique` over each state does not either.
    assert!(Condition::parse_property(p).unwrap().holds(&states[3]));
    assert!(verdicts(
        r#"unique(n.id per n.term where n.role == "leader")"#,
        &states
    )
    .iter()
    .all(|r| r.is_ok()));
    // Two leaders of one term in one state.
    let both = run(&[vec![(true, leader(3)), (true, leader(3))]]);
    let v = verdicts(p, &both);
    assert!(
        v[0].as_ref()
            .unwrap_err()
            .ends_with("but n0 had 0 in the same state"),
        "{v:?}"
    );
    // Without `where`, and combined with other conditions.
    let v = verdicts("ever_unique(n.role per n.id) || n0.alive", &states);
    assert_eq!(v.iter().filter(|r| r.is_err()).count(), 3, "{v:?}");
    assert!(
        v[2].as_ref()
            .unwrap_err()
            .contains("n1 has n.role = \"leader\" where n.id = 1, but n1 had \"follower\" earlier"),
        "{v:?}"
    );
    assert!(verdicts("!ever_unique(n.role per n.id)", &states)[3].is_ok());
}

#[test]
fn ever_agree_compares_with_every_list_seen() {
    let states = run(&[
        vec![(true, json!({"applied": ["a"]})), (true, json!({}))],
        vec![
            (true, json!({"applied": ["a", "b"]})),
            (true, json!({"applied": ["a"]})),
        ],
        // n0 crashes: its ["a", "b"] is remembered.
        vec![(false, json!({})), (true, json!({"applied": ["a"]}))],
        vec![
            (false, json!({})),
            (true, json!({"applied": ["a", "c", "d"]})),
        ],
    ]);
    let v = verdicts("ever_agree(n.applied)", &states);
    assert!(v[..3].iter().all(|r| r.is_ok()), "{v:?}");
    assert_eq!(
        v[3].as_ref().unwrap_err(),
        "`ever_agree(n.applied)` does not hold: n1's n.applied [\"a\",\"c\",\"d\"] disagrees with [\"a\",\"b\"] that n0 had earlier in the run: at index 1, \"c\" against \"b\""
    );
    // Prefixes agree, down nodes and non-lists contribute nothing.
    let fine = run(&[
        vec![
            (true, json!({"log": [1, 2, 3], "c": 1})),
            (true, json!({"log": [1, 9], "c": 1})),
        ],
        vec![
            (true, json!({"log": [1, 2, 3], "c": 3})),
            (false, json!({"log": [7]})),
        ],
        vec![
            (true, json!({"log": 5, "c": 3})),
            (true, json!({"log": [1, 2], "c": 2})),
        ],
    ]);
    assert!(verdicts("ever_agree(take(n.log, n.c))", &fine)
        .iter()
        .all(|r| r.is_ok()));
    assert!(verdicts("ever_agree(n.log)", &fine)[0].is_err());
}

#[test]
fn kept_finds_later_leaders_without_committed_entries() {
    let node = |role: &str, term: i64, log: Value, commit: i64| {
        (
            true,
            json!({"role": role, "term": term, "log": log, "commit": commit}),
        )
    };
    let p = r#"kept(take(n.log, n.commit) at n.term in n.log where n.role == "leader")"#;
    let states = run(&[
        vec![
            node("leader", 2, json!([1, 2]), 2),
            node("follower", 2, json!([1, 2]), 1),
            node("follower", 1, json!([1]), 0),
        ],
        // n0 crashes, having committed [1, 2] at term 2. n2 still thinks it leads term 1:
        // a stale leader of an older term need not have it.
        vec![
            (false, json!({})),
            node("follower", 2, json!([1, 2]), 1),
            node("leader", 1, json!([1]), 0),
        ],
        // n1 leads term 3 with the entry: fine.
        vec![
            (false, json!({})),
            node("leader", 3, json!([1, 2, 5]), 1),
            node("follower", 3, json!([1]), 0),
        ],
        // n2 leads term 4 without entry 2, committed at term 2.
        vec![
            (false, json!({})),
            node("follower", 4, json!([1, 2, 5]), 1),
            node("leader", 4, json!([1, 7]), 0),
        ],
    ]);
    let v = verdicts(p, &states);
    assert!(v[..3].iter().all(|r| r.is_ok()), "{v:?}");
    assert_eq!(
        v[3].as_ref().unwrap_err(),
        &format!("`{p}` does not hold: n2 (n.role == \"leader\", n.term = 4) lacks [1,2] that n0 had as take(n.log, n.commit) at n.term = 2: at index 1 its n.log has 7 where that had 2")
    );
    // A leader of term 4 whose log is too short.
    let mut short = states.clone();
    short[3] = state(&[
        (false, json!({})),
        node("follower", 4, json!([1, 2, 5]), 1),
        node("leader", 4, json!([1]), 0),
    ]);
    let v = verdicts(p, &short);
    assert!(
        v[3].as_ref()
            .unwrap_err()
            .ends_with("its n.log has only 1 entries"),
        "{v:?}"
    );
    // Without `where`, every live node is judged: n2 at term 2 lacks n0's entry 2.
    let v = verdicts(
        "kept(take(n.log, n.commit) at n.term in n.log)",
        &states[..1],
    );
    assert!(v[0].is_ok(), "{v:?}");
    let two = run(&[vec![
        node("leader", 2, json!([1, 2]), 2),
        node("follower", 2, json!([1]), 1),
    ]]);
    let v = verdicts("kept(take(n.log, n.commit) at n.term in n.log)", &two);
    assert!(
        v[0].as_ref()
            .unwrap_err()
            .contains("n1 (n.term = 2) lacks [1,2]"),
        "{v:?}"
    );
}

#[test]
fn kept_remembers_little() {
    let c = Condition::parse_property("kept(n.log at n.term in n.log where false)").unwrap();
    let mut memory = Memory::default();
    for k in 0..50 {
        let log: Vec<i64> = (0..k).collect();
        let s = state(&[
            (true, json!({"log": log.clone(), "term": 1})),
            (true, json!({"log": log, "term": 1})),
        ]);
        c.check(&s, &mut memory).unwrap();
    }
    assert_eq!(memory.states(), 50);
    // Every shorter list at term 1 is a prefix of the longest at term 1.
    assert!(
        format!("{memory:?}").matches("Seen").count() == 1,
        "{memory:?}"
    );
}

#[test]
fn history_built_ins_are_for_properties_outside_quantifiers() {
    for h in [
        "ever_unique(n.a per n.b)",
        "ever_agree(n.log)",
        "kept(n.log at n.term in n.log)",
    ] {
        let name = &h[..h.find('(').unwrap()];
        let e = Condition::parse(h).unwrap_err();
        assert_eq!(
            (e.column, e.message),
            (
                1,
                format!(
                    "`{name}(...)` remembers the run's history: it is for properties, not `when`"
                )
            )
        );
        let e = Condition::parse_property(&format!("any({h})")).unwrap_err();
        assert_eq!(e.column, 5);
        assert!(e.message.contains("outside any(...)"), "{e}");
        assert!(Condition::parse_property(&format!("ever_agree({h})")).is_err());
        assert!(Condition::parse_property(&format!("unique({h} per n.x)")).is_err());
        let c = Condition::parse_property(&format!("!({h}) || n0.alive && {h}")).unwrap();
        assert!(c.has_history());
        assert!(parse(h).is_err());
        // Display round-trips through the parser.
        let shown = c.expr.to_string();
        assert_eq!(parse_as(&shown, Mode::Property).unwrap().to_string(), shown);
    }
    assert!(!Condition::parse_property("n0.alive").unwrap().has_history());
    let e = Condition::parse_property("kept(n.log in n.log)").unwrap_err();
    assert!(e.message.contains("expected `at`"), "{e}");
    let e = Condition::parse_property("kept(n.log at n.term n.log)").unwrap_err();
    assert!(e.message.contains("expected `in`"), "{e}");
    let e = Condition::parse_property("ever_unique(n.a, n.b)").unwrap_err();
    assert!(e.message.contains("expected `per`"), "{e}");
    // Each built-in has its own memory slot.
    let c = Condition::parse_property("ever_agree(n.a) && ever_agree(n.b)").unwrap();
    let Expr::Bin(a, _, b) = &c.expr else {
        panic!()
    };
    assert!(matches!(
        (&**a, &**b),
        (Expr::History(0, _), Expr::History(1, _))
    ));
    let states = run(&[
        vec![(true, json!({"a": [1], "b": [2]}))],
        vec![(true, json!({"a": [1, 3], "b": [2, 4]}))],
    ]);
    assert!(verdicts("ever_agree(n.a) && ever_agree(n.b)", &states)
        .iter()
        .all(|r| r.is_ok()));
}

#[test]
fn time_uuids_order_by_when_they_were_made() {
    // Text order says the opposite of the timestamps: the first was made in 2012
    // (time_hi 1e2), the second in 1771 (time_hi 0d4).
    let later = json!({"b": "00000001-0000-11e2-8000-000000000001"});
    let earlier = json!({"b": "ffffffff-0000-10d4-8000-000000000001"});
    let g = parse("m.b > n.b").unwrap();
    assert!(g.holds(&obj(earlier.clone()), &obj(later.clone())));
    assert!(!g.holds(&obj(later.clone()), &obj(earlier.clone())));
    // Other strings still compare as text.
    assert!(g.holds(&obj(json!({"b": "a"})), &obj(json!({"b": "b"}))));
    // A missing ballot is not ordered: the guard does not hold (conservative).
    assert!(!g.holds(&Map::new(), &obj(later)));
}
