//! The syntax tree every form of the language parses to: guards, conditions, property
//! conditions and method summaries share it.

use std::fmt;

use serde_json::Value;

use crate::history::History;

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Lit(Value),
    /// `n.a.b` (node) or `m.a.b` (message).
    Var {
        scope: Scope,
        path: Vec<String>,
    },
    Not(Box<Expr>),
    Neg(Box<Expr>),
    Len(Box<Expr>),
    Bin(Box<Expr>, Op, Box<Expr>),
    /// `any(e)` / `all(e)` / `count(e)` over the nodes of a global state (conditions only).
    Quant(Quant, Box<Expr>),
    /// `unique(v per k)` / `unique(v per k where c)`: no two nodes (where `c` holds) with the
    /// same `k` hold different `v`s (nodes where either is null, or cannot be evaluated, do not
    /// count; conditions only).
    Unique(Box<Expr>, Box<Expr>, Option<Box<Expr>>),
    /// `take(l, k)`: the first `k` elements of list `l` (conditions only).
    Take(Box<Expr>, Box<Expr>),
    /// A history built-in and its memory slot (property conditions only, outside any/all).
    History(usize, Box<History>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// `n.`: the receiving node, or each node inside `any`/`all`.
    Node,
    Msg,
    /// `nK.`: node K of the global state (conditions only).
    At(usize),
    /// A method summary's K-th parameter (`a.ballot`, or `a` alone; summaries only).
    Param(usize),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quant {
    Any,
    All,
    /// How many nodes satisfy it.
    Count,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Or,
    And,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Add,
    Sub,
}

impl Op {
    pub(crate) fn text(self) -> &'static str {
        match self {
            Op::Or => "||",
            Op::And => "&&",
            Op::Eq => "==",
            Op::Ne => "!=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Add => "+",
            Op::Sub => "-",
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Lit(v) => write!(f, "{v}"),
            Expr::Var { scope, path } => match scope {
                Scope::Node => write!(f, "n.{}", path.join(".")),
                Scope::Msg => write!(f, "m.{}", path.join(".")),
                Scope::At(k) => write!(f, "n{k}.{}", path.join(".")),
                Scope::Param(k) if path.is_empty() => write!(f, "${k}"),
                Scope::Param(k) => write!(f, "${k}.{}", path.join(".")),
            },
            Expr::Not(e) => write!(f, "!{e}"),
            Expr::Neg(e) => write!(f, "-{e}"),
            Expr::Len(e) => write!(f, "len({e})"),
            Expr::Bin(a, op, b) => write!(f, "({a} {} {b})", op.text()),
            Expr::Quant(Quant::Any, e) => write!(f, "any({e})"),
            Expr::Quant(Quant::All, e) => write!(f, "all({e})"),
            Expr::Quant(Quant::Count, e) => write!(f, "count({e})"),
            Expr::Unique(v, k, None) => write!(f, "unique({v} per {k})"),
            Expr::Unique(v, k, Some(c)) => write!(f, "unique({v} per {k} where {c})"),
            Expr::Take(l, k) => write!(f, "take({l}, {k})"),
            Expr::History(_, h) => write!(f, "{h}"),
        }
    }
}

impl Expr {
    /// Every `n.` (node) or `m.` (message) variable the expression reads: the first path element.
    pub fn vars(&self, scope: Scope, out: &mut Vec<String>) {
        match self {
            Expr::Var { scope: s, path } if *s == scope => out.extend(path.first().cloned()),
            e => e.children().into_iter().for_each(|c| c.vars(scope, out)),
        }
    }

    /// Its direct subexpressions, in the order written.
    pub fn children(&self) -> Vec<&Expr> {
        match self {
            Expr::Lit(_) | Expr::Var { .. } => Vec::new(),
            Expr::Not(e) | Expr::Neg(e) | Expr::Len(e) | Expr::Quant(_, e) => vec![e],
            Expr::Bin(a, _, b) | Expr::Take(a, b) => vec![a, b],
            Expr::Unique(v, k, c) => {
                let mut out: Vec<&Expr> = vec![v, k];
                out.extend(c.as_deref());
                out
            }
            Expr::History(_, h) => h.args(),
        }
    }
}
