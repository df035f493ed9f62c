//! Evaluation: an [`Expr`] against a receiving node and a message (guards), or against the
//! nodes of a global state and a run's [`Memory`] (conditions). One function per kind of node
//! of the tree; values are JSON values and a missing variable is `null`.

use std::cell::RefCell;

use serde_json::{Map, Value};

use crate::ast::{Expr, Op, Quant, Scope};
use crate::history::{History, Memory};
use crate::Node;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct EvalError(pub String);

/// What an expression reads its variables from.
struct Env<'a, N> {
    /// What `n.` names.
    node: NodeVars<'a>,
    msg: &'a Map<String, Value>,
    /// The global state's nodes, for `nK.` and `any`/`all`.
    nodes: &'a [N],
    /// A condition's memory, for history built-ins.
    history: Option<&'a Judging<'a>>,
}

// By hand: derived, they would ask `N: Copy` of the nodes the references point to.
impl<N> Clone for Env<'_, N> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<N> Copy for Env<'_, N> {}

impl<'a, N: Node> Env<'a, N> {
    /// The same environment with `n.` naming node `i` (inside `any`, `all`, ...).
    fn at(&self, i: usize) -> Env<'a, N> {
        let nodes: &'a [N] = self.nodes;
        Env {
            node: NodeVars::of(i, &nodes[i]),
            ..*self
        }
    }
}

/// The memory history built-ins are judged against, and the first reason one gave for failing.
struct Judging<'a> {
    memory: &'a Memory,
    why: RefCell<Option<String>>,
}

#[derive(Clone, Copy)]
enum NodeVars<'a> {
    None,
    /// A sets-file guard's receiving node.
    Vars(&'a Map<String, Value>),
    /// Node K of a global state, up or not: `alive` is whether it is up, `id` is K, and a down
    /// node has no other variables.
    View(usize, bool, &'a Map<String, Value>),
}

impl<'a> NodeVars<'a> {
    fn of<N: Node>(k: usize, node: &'a N) -> NodeVars<'a> {
        NodeVars::View(k, node.alive(), node.vars())
    }

    fn get(self, name: &str) -> Value {
        match self {
            NodeVars::None => Value::Null,
            NodeVars::Vars(m) => m.get(name).cloned().unwrap_or(Value::Null),
            NodeVars::View(_, alive, _) if name == "alive" => Value::Bool(alive),
            NodeVars::View(k, _, _) if name == "id" => Value::from(k),
            NodeVars::View(_, false, _) => Value::Null,
            NodeVars::View(_, true, vars) => vars.get(name).cloned().unwrap_or(Value::Null),
        }
    }
}

/// A guard has no global state: its node list is of a type with no values.
enum NoNode {}

impl Node for NoNode {
    fn alive(&self) -> bool {
        match *self {}
    }
    fn vars(&self) -> &Map<String, Value> {
        match *self {}
    }
}

/// Whether `expr` holds in the state of `nodes`, judged against `memory` (which absorbed that
/// state last), and why not if a history built-in failed.
pub(crate) fn judge<N: Node>(expr: &Expr, nodes: &[N], memory: &Memory) -> (bool, Option<String>) {
    let no_message = Map::new();
    let history = Judging {
        memory,
        why: RefCell::new(None),
    };
    let env = Env {
        node: NodeVars::None,
        msg: &no_message,
        nodes,
        history: Some(&history),
    };
    let holds = matches!(expr.eval_in(&env), Ok(Value::Bool(true)));
    (holds, history.why.into_inner())
}

impl Expr {
    /// Evaluate with `n.` naming node `i` of `nodes` (history built-ins' arguments).
    pub(crate) fn eval_node<N: Node>(&self, nodes: &[N], i: usize) -> Result<Value, EvalError> {
        let no_message = Map::new();
        let env = Env {
            node: NodeVars::None,
            msg: &no_message,
            nodes,
            history: None,
        };
        self.eval_in(&env.at(i))
    }

    /// Evaluate against a node's variables and a message's fields.
    pub fn eval(
        &self,
        node: &Map<String, Value>,
        msg: &Map<String, Value>,
    ) -> Result<Value, EvalError> {
        self.eval_in(&Env::<NoNode> {
            node: NodeVars::Vars(node),
            msg,
            nodes: &[],
            history: None,
        })
    }

    /// Does the guard hold? Evaluation errors count as "does not hold".
    pub fn holds(&self, node: &Map<String, Value>, msg: &Map<String, Value>) -> bool {
        matches!(self.eval(node, msg), Ok(Value::Bool(true)))
    }

    fn eval_in<N: Node>(&self, env: &Env<N>) -> Result<Value, EvalError> {
        Ok(match self {
            Expr::Lit(v) => v.clone(),
            Expr::Var { scope, path } => self.var(*scope, path, env)?,
            Expr::Not(e) => Value::Bool(!truthy(&e.eval_in(env)?)?),
            Expr::Neg(e) => Value::from(checked(int(&e.eval_in(env)?)?.checked_neg())?),
            Expr::Len(e) => match e.eval_in(env)? {
                Value::Array(a) => a.len().into(),
                Value::String(s) => s.chars().count().into(),
                Value::Object(o) => o.len().into(),
                Value::Null => 0.into(),
                other => return Err(EvalError(format!("len() of {other}"))),
            },
            Expr::Take(l, k) => {
                let list = match l.eval_in(env)? {
                    Value::Array(a) => a,
                    Value::Null => Vec::new(),
                    other => return Err(EvalError(format!("take() of {other}, not a list"))),
                };
                let k = usize::try_from(int(&k.eval_in(env)?)?).unwrap_or(0);
                Value::Array(list.into_iter().take(k).collect())
            }
            Expr::History(slot, h) => history(*slot, h, env)?,
            Expr::Unique(v, k, c) => unique(v, k, c.as_deref(), env),
            Expr::Quant(q, e) => quant(*q, e, env),
            Expr::Bin(a, op, b) => binary(a, *op, b, env)?,
        })
    }

    /// `n.a.b`, `m.a.b` or `nK.a.b`.
    fn var<N: Node>(
        &self,
        scope: Scope,
        path: &[String],
        env: &Env<N>,
    ) -> Result<Value, EvalError> {
        let mut v = match scope {
            Scope::Node => env.node.get(&path[0]),
            Scope::Msg => env.msg.get(&path[0]).cloned().unwrap_or(Value::Null),
            Scope::At(k) => match env.nodes.get(k) {
                Some(node) => NodeVars::of(k, node).get(&path[0]),
                // A node the state does not have reads as a down one.
                None if path[0] == "alive" => Value::Bool(false),
                None if path[0] == "id" => Value::from(k),
                None => Value::Null,
            },
            Scope::Param(_) => return Err(EvalError(format!("{self}: a summary's parameter"))),
        };
        for p in &path[1..] {
            v = v.get(p).cloned().unwrap_or(Value::Null);
        }
        Ok(v)
    }
}

/// A history built-in: judged by the run's memory; the first failure's reason is kept.
fn history<N: Node>(slot: usize, h: &History, env: &Env<N>) -> Result<Value, EvalError> {
    let Some(judging) = env.history else {
        return Err(EvalError(format!("{h} needs the run's history")));
    };
    Ok(match judging.memory.judge(slot, h, env.nodes) {
        Ok(()) => Value::Bool(true),
        Err(why) => {
            judging.why.borrow_mut().get_or_insert(why);
            Value::Bool(false)
        }
    })
}

/// `unique(v per k where c)`.
fn unique<N: Node>(v: &Expr, k: &Expr, c: Option<&Expr>, env: &Env<N>) -> Value {
    let mut seen: Vec<(Value, Value)> = Vec::new();
    let mut unique = true;
    for i in 0..env.nodes.len() {
        let inner = env.at(i);
        if let Some(c) = c {
            if !matches!(c.eval_in(&inner), Ok(Value::Bool(true))) {
                continue;
            }
        }
        let (Ok(x), Ok(key)) = (v.eval_in(&inner), k.eval_in(&inner)) else {
            continue;
        };
        if x.is_null() || key.is_null() {
            continue;
        }
        unique &= seen.iter().all(|(sk, sx)| *sk != key || *sx == x);
        seen.push((key, x));
    }
    Value::Bool(unique)
}

/// `any(e)`, `all(e)`, `count(e)`: a node where `e` cannot be evaluated does not satisfy it.
fn quant<N: Node>(q: Quant, e: &Expr, env: &Env<N>) -> Value {
    let mut each =
        (0..env.nodes.len()).map(|i| matches!(e.eval_in(&env.at(i)), Ok(Value::Bool(true))));
    match q {
        Quant::Any => Value::Bool(each.any(|b| b)),
        Quant::All => Value::Bool(each.all(|b| b)),
        Quant::Count => Value::from(each.filter(|&b| b).count()),
    }
}

fn binary<N: Node>(a: &Expr, op: Op, b: &Expr, env: &Env<N>) -> Result<Value, EvalError> {
    let x = a.eval_in(env)?;
    Ok(match op {
        // Short-circuit, so `n.x != null && n.x > 1` is safe.
        Op::And => Value::Bool(truthy(&x)? && truthy(&b.eval_in(env)?)?),
        Op::Or => Value::Bool(truthy(&x)? || truthy(&b.eval_in(env)?)?),
        _ => {
            let y = b.eval_in(env)?;
            match op {
                Op::Eq => Value::Bool(x == y),
                Op::Ne => Value::Bool(x != y),
                Op::Add => Value::from(checked(int(&x)?.checked_add(int(&y)?))?),
                Op::Sub => Value::from(checked(int(&x)?.checked_sub(int(&y)?))?),
                _ => {
                    let ord = order(&x, &y)?;
                    Value::Bool(match op {
                        Op::Lt => ord.is_lt(),
                        Op::Le => ord.is_le(),
                        Op::Gt => ord.is_gt(),
                        _ => ord.is_ge(),
                    })
                }
            }
        }
    })
}

/// Integers with integers, strings with strings (time UUIDs by when they were made).
fn order(x: &Value, y: &Value) -> Result<std::cmp::Ordering, EvalError> {
    Ok(match (x, y) {
        (Value::Number(_), Value::Number(_)) => int(x)?.cmp(&int(y)?),
        (Value::String(s), Value::String(t)) => match (time_uuid(s), time_uuid(t)) {
            (Some(a), Some(b)) => a.cmp(&b),
            _ => s.cmp(t),
        },
        _ => return Err(EvalError(format!("cannot order {x} and {y}"))),
    })
}

/// A version-1 (time-based) UUID's timestamp and then its clock sequence and node, the order
/// Cassandra gives ballots (`TimeUUIDType`): two such strings compare by when they were made,
/// not as text, which would order them by their low time bits first.
fn time_uuid(s: &str) -> Option<(u64, u16, [u8; 6])> {
    let u = uuid::Uuid::try_parse(s).ok()?;
    if u.get_version_num() != 1 {
        return None;
    }
    let (ticks, clock_seq) = u.get_timestamp()?.to_gregorian();
    let node: [u8; 6] = u.as_bytes()[10..].try_into().ok()?;
    Some((ticks, clock_seq, node))
}

fn truthy(v: &Value) -> Result<bool, EvalError> {
    match v {
        Value::Bool(b) => Ok(*b),
        other => Err(EvalError(format!("{other} is not true or false"))),
    }
}

/// An integer operation's result, or an error when it overflowed.
fn checked(v: Option<i64>) -> Result<i64, EvalError> {
    v.ok_or_else(|| EvalError("integer overflow".into()))
}

fn int(v: &Value) -> Result<i64, EvalError> {
    v.as_i64()
        .ok_or_else(|| EvalError(format!("{v} is not an integer")))
}
