//! The guard language of sets files: a small expression language over the receiving node's state
//! (`n.var`) and the message's fields (`m.field`), e.g. `m.ballot > n.promised && n.role == "LEADER"`.
//!
//! Grammar (lowest precedence first):
//! ```text
//! or   := and ("||" and)*
//! and  := not ("&&" not)*
//! not  := "!" not | cmp
//! cmp  := sum (("==" | "!=" | "<" | "<=" | ">" | ">=") sum)?
//! sum  := unary (("+" | "-") unary)*
//! unary:= "-" unary | atom
//! atom := INT | STRING | "true" | "false" | "null" | ("n" | "m") "." IDENT ("." IDENT)*
//!       | "len" "(" or ")" | "(" or ")"
//! ```
//! Values are JSON values; a missing variable is `null`. Ordering compares integers with
//! integers and strings with strings; anything else is an evaluation error, which callers treat
//! conservatively (the guard does not hold).
//!
//! The same language states [`Condition`]s over a whole global state (a workload's
//! `[faults] when`). There is no message and no receiving node; instead
//! ```text
//! atom += "n" INT "." IDENT ("." IDENT)*       node INT's variable: n2.state
//!       | ("any" | "all") "(" or ")"           over every node, `n.` naming each in turn
//!       | "count" "(" or ")"                   how many nodes satisfy it
//!       | "unique" "(" or "per" or ("where" or)? ")"
//!                                              no two nodes (where the last `or` holds) with
//!                                              equal keys hold different values (null values
//!                                              and keys ignored)
//!       | "take" "(" or "," or ")"             the first K elements of a list (null reads [])
//! ```
//! e.g. `n2.state == "FOLLOWING"` or `all(!n.alive || n.zabState == "BROADCAST")`. `alive` is
//! whether the node is up and `id` its number (0-based; `n2.id` is 2): both are reserved, not
//! the system's variables. A node that is down has no other variables (they read `null`: what
//! it last reported is not its state now). A node for which the body of `any`/`all` cannot be
//! evaluated does not satisfy it.
//!
//! A workload's `[[property]]` is a condition parsed by [`Condition::parse_property`], which
//! also has history built-ins ([`crate::history`]), judged over the run so far and allowed only
//! outside `any`/`all`/`count`/`unique` (combined with `&&`, `||`, `!`):
//! ```text
//! atom += "ever_unique" "(" or "per" or ("where" or)? ")"
//!                                     as unique, over every live node of every state so far
//!       | "ever_agree" "(" or ")"     every list a live node had so far agrees with every
//!                                     other on their common prefix
//!       | "kept" "(" or "at" or "in" or ("where" or)? ")"
//!                                     kept(L at E in LOG where C): every list L a live node
//!                                     had so far, at its E then, is a prefix of LOG at every
//!                                     live node where C holds whose E is at least that one
//! ```
//! They need memory: [`Condition::check`] takes the property's [`Memory`].
//!
//! Limits (the text comes from files flymc may be handed): parentheses and calls' arguments
//! nest at most [`MAX_NESTING`] (64) deep, a syntax error at the column that opens one more;
//! chains of `||`, `&&`, `+`/`-` may be any length and runs of `!`/`-` any count, and are
//! parsed and judged without recursing once per term.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::history::History;
pub use crate::history::Memory;
use crate::state::{GlobalState, NodeView};

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
    fn text(self) -> &'static str {
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

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("column {column}: {message}")]
pub struct ParseError {
    /// 1-based column in the guard text.
    pub column: usize,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct EvalError(pub String);

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Int(i64),
    Str(String),
    Ident(String),
    Sym(&'static str),
}

fn lex(src: &str) -> Result<Vec<(usize, Tok)>, ParseError> {
    let chars: Vec<char> = src.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    let err = |column: usize, message: String| ParseError { column, message };
    while i < chars.len() {
        let c = chars[i];
        let col = i + 1;
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            let text: String = chars[start..i].iter().collect();
            let n = text
                .parse()
                .map_err(|_| err(col, format!("number `{text}` is too large")))?;
            out.push((col, Tok::Int(n)));
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push((col, Tok::Ident(chars[start..i].iter().collect())));
        } else if c == '"' {
            i += 1;
            let start = i;
            while i < chars.len() && chars[i] != '"' {
                i += 1;
            }
            if i >= chars.len() {
                return Err(err(col, "unterminated string".into()));
            }
            out.push((col, Tok::Str(chars[start..i].iter().collect())));
            i += 1;
        } else {
            let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
            let sym = ["==", "!=", "<=", ">=", "&&", "||"]
                .into_iter()
                .find(|s| *s == two)
                .or_else(|| {
                    ["<", ">", "!", "+", "-", "(", ")", ".", ","]
                        .into_iter()
                        .find(|s| s.starts_with(c))
                });
            match sym {
                Some(s) => {
                    i += s.len();
                    out.push((col, Tok::Sym(s)));
                }
                None => return Err(err(col, format!("unexpected character `{c}`"))),
            }
        }
    }
    Ok(out)
}

/// What is being parsed: the names it may use differ.
#[derive(Clone, Copy)]
enum Mode<'p> {
    /// A sets-file guard: `n.` and `m.`.
    Guard,
    /// A [`Condition`] over a global state: `nK.`, `any`, `all`.
    Condition,
    /// A property's [`Condition`]: history built-ins too.
    Property,
    /// A method summary's body: its parameters.
    Summary(&'p [String]),
}

struct Parser<'p> {
    toks: Vec<(usize, Tok)>,
    pos: usize,
    end_col: usize,
    mode: Mode<'p>,
    /// Parsing a [`Condition`] (over a global state) rather than a sets-file guard.
    condition: bool,
    /// How many `any`/`all` enclose the current position.
    quantified: usize,
    /// History built-ins so far: the next one's memory slot.
    slots: usize,
    /// How many parentheses (or calls' argument lists) enclose the current position.
    nesting: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|(_, t)| t)
    }
    fn col(&self) -> usize {
        self.toks.get(self.pos).map_or(self.end_col, |(c, _)| *c)
    }
    fn err<T>(&self, message: impl Into<String>) -> Result<T, ParseError> {
        Err(ParseError {
            column: self.col(),
            message: message.into(),
        })
    }
    fn at(&self, s: &str) -> bool {
        matches!(self.peek(), Some(Tok::Sym(t)) if *t == s)
    }
    fn eat(&mut self, s: &str) -> bool {
        if self.at(s) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    /// Consume keyword `word` (an identifier such as `per`) if it is next.
    fn eat_word(&mut self, word: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Ident(p)) if p == word) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    /// `where C` if it comes next.
    fn where_clause(&mut self) -> Result<Option<Box<Expr>>, ParseError> {
        Ok(match self.eat_word("where") {
            true => Some(Box::new(self.or()?)),
            false => None,
        })
    }
    fn expect(&mut self, s: &str) -> Result<(), ParseError> {
        if self.eat(s) {
            Ok(())
        } else {
            self.err(format!("expected `{s}`"))
        }
    }
    /// `next (op next)*` for `ops`, read in a loop (a chain of thousands of terms does not
    /// recurse) and built by [`chain`]; only one operator when not `repeat`.
    fn binary(
        &mut self,
        ops: &[(&str, Op)],
        next: fn(&mut Self) -> Result<Expr, ParseError>,
        repeat: bool,
    ) -> Result<Expr, ParseError> {
        let mut terms = vec![(Op::Add, next(self)?)];
        while let Some(&(_, op)) = ops.iter().find(|(s, _)| self.at(s)) {
            self.pos += 1;
            terms.push((op, next(self)?));
            if !repeat {
                break;
            }
        }
        Ok(chain(terms))
    }
    /// Every parenthesised expression or call's argument comes back here: deeper than
    /// [`MAX_NESTING`] is a syntax error at what opened it, before the parser's own recursion
    /// can exhaust the stack.
    fn or(&mut self) -> Result<Expr, ParseError> {
        if self.nesting > MAX_NESTING {
            let column = self
                .toks
                .get(self.pos.wrapping_sub(1))
                .map_or(1, |(c, _)| *c);
            return Err(ParseError {
                column,
                message: format!(
                    "nested more than {MAX_NESTING} deep: flatten the expression or split it"
                ),
            });
        }
        self.nesting += 1;
        let e = self.binary(&[("||", Op::Or)], Parser::and, true);
        self.nesting -= 1;
        e
    }
    fn and(&mut self) -> Result<Expr, ParseError> {
        self.binary(&[("&&", Op::And)], Parser::not, true)
    }
    fn not(&mut self) -> Result<Expr, ParseError> {
        let mut run = 0;
        while self.eat("!") {
            run += 1;
        }
        Ok(prefix(run, self.cmp()?, Expr::Not))
    }
    fn cmp(&mut self) -> Result<Expr, ParseError> {
        let ops = [
            ("==", Op::Eq),
            ("!=", Op::Ne),
            ("<=", Op::Le),
            (">=", Op::Ge),
            ("<", Op::Lt),
            (">", Op::Gt),
        ];
        self.binary(&ops, Parser::sum, false)
    }
    fn sum(&mut self) -> Result<Expr, ParseError> {
        self.binary(&[("+", Op::Add), ("-", Op::Sub)], Parser::unary, true)
    }
    fn unary(&mut self) -> Result<Expr, ParseError> {
        let mut run = 0;
        while self.eat("-") {
            run += 1;
        }
        Ok(prefix(run, self.atom()?, Expr::Neg))
    }
    fn atom(&mut self) -> Result<Expr, ParseError> {
        let Some(tok) = self.peek().cloned() else {
            return self.err("unexpected end of guard");
        };
        self.pos += 1;
        match tok {
            Tok::Int(n) => Ok(Expr::Lit(n.into())),
            Tok::Str(s) => Ok(Expr::Lit(Value::String(s))),
            Tok::Sym("(") => {
                let e = self.or()?;
                self.expect(")")?;
                Ok(e)
            }
            Tok::Ident(id) => match id.as_str() {
                "true" => Ok(Expr::Lit(true.into())),
                "false" => Ok(Expr::Lit(false.into())),
                "null" => Ok(Expr::Lit(Value::Null)),
                "len" => {
                    self.expect("(")?;
                    let e = self.or()?;
                    self.expect(")")?;
                    Ok(Expr::Len(Box::new(e)))
                }
                "any" | "all" | "count" if self.condition => {
                    let q = match id.as_str() {
                        "any" => Quant::Any,
                        "all" => Quant::All,
                        _ => Quant::Count,
                    };
                    self.expect("(")?;
                    self.quantified += 1;
                    let e = self.or()?;
                    self.quantified -= 1;
                    self.expect(")")?;
                    Ok(Expr::Quant(q, Box::new(e)))
                }
                "unique" if self.condition => {
                    self.expect("(")?;
                    self.quantified += 1;
                    let v = self.or()?;
                    if !self.eat_word("per") {
                        return self.err("expected `per` (unique(VALUE per KEY))");
                    }
                    let k = self.or()?;
                    let c = self.where_clause()?;
                    self.quantified -= 1;
                    self.expect(")")?;
                    Ok(Expr::Unique(Box::new(v), Box::new(k), c))
                }
                "take" if self.condition => {
                    self.expect("(")?;
                    let l = self.or()?;
                    self.expect(",")?;
                    let k = self.or()?;
                    self.expect(")")?;
                    Ok(Expr::Take(Box::new(l), Box::new(k)))
                }
                "ever_unique" | "ever_agree" | "kept" if self.condition => self.history(&id),
                _ => match self.scope_of(&id) {
                    Some(scope) => self.var(scope, &id),
                    None => {
                        self.pos -= 1;
                        let names = match self.mode {
                            Mode::Condition => "n0.<var>, n1.<var>, ..., any(...), all(...), count(...), unique(... per ...), take(..., ...), true, false, null, len(...)".to_string(),
                            Mode::Property => "n0.<var>, n1.<var>, ..., any(...), all(...), count(...), unique(... per ...), take(..., ...), ever_unique(... per ...), ever_agree(...), kept(... at ... in ...), true, false, null, len(...)".to_string(),
                            Mode::Guard => "n.<var>, m.<field>, true, false, null, len(...)".to_string(),
                            Mode::Summary(ps) => format!("the parameters {}, true, false, null, len(...)", ps.join(", ")),
                        };
                        self.err(format!("unknown name `{id}` (use {names})"))
                    }
                },
            },
            Tok::Sym(s) => {
                self.pos -= 1;
                self.err(format!("unexpected `{s}`"))
            }
        }
    }
}

impl Parser<'_> {
    /// A history built-in named `id` (consumed): its arguments and a memory slot.
    fn history(&mut self, id: &str) -> Result<Expr, ParseError> {
        self.pos -= 1;
        if !matches!(self.mode, Mode::Property) {
            return self.err(format!(
                "`{id}(...)` remembers the run's history: it is for properties, not `when`"
            ));
        }
        if self.quantified > 0 {
            return self.err(format!(
                "`{id}(...)` judges the whole run so far: use it outside any(...), all(...), count(...), unique(...) and the history built-ins"
            ));
        }
        self.pos += 1;
        self.expect("(")?;
        self.quantified += 1;
        let h = match id {
            "ever_agree" => History::EverAgree(self.or()?),
            "ever_unique" => {
                let value = self.or()?;
                if !self.eat_word("per") {
                    return self.err("expected `per` (ever_unique(VALUE per KEY))");
                }
                let key = self.or()?;
                let when = self.where_clause()?.map(|c| *c);
                History::EverUnique { value, key, when }
            }
            _ => {
                let list = self.or()?;
                if !self.eat_word("at") {
                    return self.err("expected `at` (kept(LIST at EPOCH in LOG where CONDITION))");
                }
                let epoch = self.or()?;
                if !self.eat_word("in") {
                    return self.err("expected `in` (kept(LIST at EPOCH in LOG where CONDITION))");
                }
                let log = self.or()?;
                let when = self.where_clause()?.map(|c| *c);
                History::Kept {
                    list,
                    epoch,
                    log,
                    when,
                }
            }
        };
        self.quantified -= 1;
        self.expect(")")?;
        self.slots += 1;
        Ok(Expr::History(self.slots - 1, Box::new(h)))
    }

    /// What a name before `.` refers to, if it is a variable's scope here.
    fn scope_of(&self, id: &str) -> Option<Scope> {
        if let Mode::Summary(ps) = self.mode {
            return ps.iter().position(|p| p == id).map(Scope::Param);
        }
        match id {
            "n" => Some(Scope::Node),
            "m" => Some(Scope::Msg),
            _ if self.condition => {
                let k = id.strip_prefix('n')?;
                if k.is_empty() || !k.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                k.parse().ok().map(Scope::At)
            }
            _ => None,
        }
    }

    /// The rest of `id.a.b` (the name is consumed).
    fn var(&mut self, scope: Scope, id: &str) -> Result<Expr, ParseError> {
        if self.condition {
            let why = match scope {
                Scope::Msg => Some("a condition has no message: `m.` is for sets-file guards"),
                Scope::Node if self.quantified == 0 => Some(
                    "`n.` names each node only inside any(...) or all(...); name one node as n0, n1, ...",
                ),
                _ => None,
            };
            if let Some(why) = why {
                self.pos -= 1;
                return self.err(why);
            }
        }
        let mut path = Vec::new();
        while self.eat(".") {
            match self.peek().cloned() {
                Some(Tok::Ident(f)) => {
                    self.pos += 1;
                    path.push(f);
                }
                _ => return self.err("expected a name after `.`"),
            }
        }
        if path.is_empty() && !matches!(scope, Scope::Param(_)) {
            self.pos -= 1;
            return self.err(format!("`{id}` must be followed by `.name`"));
        }
        Ok(Expr::Var { scope, path })
    }
}

/// How deeply parentheses and calls' arguments may nest: far more than anyone writes by hand,
/// and few enough that parsing and evaluating stay within a small thread's stack.
pub const MAX_NESTING: usize = 64;

/// Chains of up to this many terms keep their written (left-nested) shape; longer ones are
/// split in halves, so a chain of n terms is about 8 + log2(n) deep rather than n.
const LEFT_NESTED: usize = 8;

/// How deep a parsed expression may be: each of [`MAX_NESTING`] levels holds chains (each at
/// most [`LEFT_NESTED`] + log2 deep) and runs of `!`/`-` (at most two deep). Evaluating
/// recurses this deep at most.
const MAX_DEPTH: usize = 2048;

/// A left-associative chain `t0 op1 t1 op2 t2 ...` (the first operator is ignored) as a tree
/// of the same value: left-nested when short; halved when long, where a right half joined by
/// `-` has its operators flipped (`a - b + c` is `a - (b - c)`). `||` and `&&` keep their
/// left-to-right, short-circuit order either way.
fn chain(mut terms: Vec<(Op, Expr)>) -> Expr {
    if terms.len() <= LEFT_NESTED {
        let mut terms = terms.into_iter();
        let (_, first) = terms.next().expect("a chain has a term");
        return terms.fold(first, |a, (op, b)| Expr::Bin(Box::new(a), op, Box::new(b)));
    }
    let right = terms.split_off(terms.len() / 2);
    let join = right[0].0;
    let flip = |op| match (join, op) {
        (Op::Sub, Op::Add) => Op::Sub,
        (Op::Sub, Op::Sub) => Op::Add,
        _ => op,
    };
    let right = right.into_iter().map(|(op, e)| (flip(op), e)).collect();
    Expr::Bin(Box::new(chain(terms)), join, Box::new(chain(right)))
}

/// `run` prefix operators (`!` or `-`) before `e`: two of them are the identity on the values
/// they accept, so a run is kept as one or two (keeping the check that the value is a boolean,
/// or an integer).
fn prefix(run: usize, e: Expr, op: fn(Box<Expr>) -> Expr) -> Expr {
    match run {
        0 => e,
        r if r % 2 == 1 => op(Box::new(e)),
        _ => op(Box::new(op(Box::new(e)))),
    }
}

/// How deep `e` is (a leaf is 1), without recursing.
fn depth(e: &Expr) -> usize {
    let mut deepest = 0;
    let mut todo = vec![(e, 1)];
    while let Some((e, d)) = todo.pop() {
        deepest = deepest.max(d);
        todo.extend(e.children().into_iter().map(|c| (c, d + 1)));
    }
    deepest
}

fn parse_as(src: &str, mode: Mode) -> Result<Expr, ParseError> {
    let toks = lex(src)?;
    let mut p = Parser {
        toks,
        pos: 0,
        end_col: src.chars().count() + 1,
        mode,
        condition: matches!(mode, Mode::Condition | Mode::Property),
        quantified: 0,
        slots: 0,
        nesting: 0,
    };
    let e = p.or()?;
    if p.pos < p.toks.len() {
        return p.err("unexpected text after the expression");
    }
    if depth(&e) > MAX_DEPTH {
        return Err(ParseError {
            column: 1,
            message: format!("the expression is more than {MAX_DEPTH} operators deep: split it"),
        });
    }
    Ok(e)
}

/// Parse a guard.
pub fn parse(src: &str) -> Result<Expr, ParseError> {
    parse_as(src, Mode::Guard)
}

/// A method summary's body (`a.ballot > b.ballot` for `isAfter(a, b)`): the guard language
/// over the method's parameters instead of `n.` and `m.`; a parameter may stand alone (`x`
/// for `timestamp(x)`). The analyzer substitutes what each call passes.
pub fn parse_summary(src: &str, params: &[String]) -> Result<Expr, ParseError> {
    parse_as(src, Mode::Summary(params))
}

/// A condition over a global state's nodes, such as a workload's `[faults] when`: the guard
/// language with `nK.var` and `any(...)`/`all(...)` instead of a receiving node and a message.
/// Serialised as its text.
#[derive(Clone, Debug)]
pub struct Condition {
    text: String,
    expr: Expr,
}

impl Condition {
    /// A condition over one state, such as `[faults] when`: history built-ins are refused.
    pub fn parse(src: &str) -> Result<Condition, ParseError> {
        Ok(Condition {
            text: src.to_string(),
            expr: parse_as(src, Mode::Condition)?,
        })
    }

    /// A property's condition (`[[property]] always = '...'`): as [`Condition::parse`], and the
    /// history built-ins `ever_unique`, `ever_agree` and `kept` too, outside any(...), all(...),
    /// count(...) and unique(...). Judge it with [`Condition::check`] and a [`Memory`] per run.
    pub fn parse_property(src: &str) -> Result<Condition, ParseError> {
        Ok(Condition {
            text: src.to_string(),
            expr: parse_as(src, Mode::Property)?,
        })
    }

    /// Whether it has history built-ins (so judging it needs the run's [`Memory`]).
    pub fn has_history(&self) -> bool {
        let mut todo = vec![&self.expr];
        while let Some(e) = todo.pop() {
            if matches!(e, Expr::History(..)) {
                return true;
            }
            todo.extend(e.children());
        }
        false
    }

    /// Every variable it reads: the first name after `n.` or `nK.` (`n.log.x` gives `log`),
    /// without the reserved `alive` and `id`; sorted, each once.
    pub fn vars(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut todo = vec![&self.expr];
        while let Some(e) = todo.pop() {
            if let Expr::Var {
                scope: Scope::Node | Scope::At(_),
                path,
            } = e
            {
                if let Some(v) = path.first().filter(|v| *v != "alive" && *v != "id") {
                    out.push(v.clone());
                }
            }
            todo.extend(e.children());
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The text it was parsed from.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Every node it names by number (`n2.` gives 2), ascending.
    pub fn nodes(&self) -> Vec<usize> {
        let mut out = Vec::new();
        let mut todo = vec![&self.expr];
        while let Some(e) = todo.pop() {
            if let Expr::Var {
                scope: Scope::At(k),
                ..
            } = e
            {
                out.push(*k);
            }
            todo.extend(e.children());
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Does it hold in `state`? Evaluation errors count as "does not hold". History built-ins
    /// (in a property's condition) see only this state: a property uses [`Condition::check`].
    pub fn holds(&self, state: &GlobalState) -> bool {
        let mut memory = Memory::default();
        memory.absorb(&self.expr, &state.nodes);
        self.judge(state, &memory).0
    }

    /// A property's check of the next state of a run: `memory` (fresh per run) first absorbs
    /// what the state's live nodes show, then the condition is judged. `Err` is the violation's
    /// message, ``` `CONDITION` does not hold```, followed by `: REASON` when a history built-in
    /// failed (which node, and what it lacks or contradicts).
    pub fn check(&self, state: &GlobalState, memory: &mut Memory) -> Result<(), String> {
        memory.absorb(&self.expr, &state.nodes);
        match self.judge(state, memory) {
            (true, _) => Ok(()),
            (false, None) => Err(format!("`{}` does not hold", self.text)),
            (false, Some(why)) => Err(format!("`{}` does not hold: {why}", self.text)),
        }
    }

    /// Whether it holds in the state `memory` absorbed last, and why not if a history built-in
    /// failed.
    fn judge(&self, state: &GlobalState, memory: &Memory) -> (bool, Option<String>) {
        let no_message = Map::new();
        let history = Judging {
            memory,
            why: std::cell::RefCell::new(None),
        };
        let env = Env {
            node: NodeVars::None,
            msg: &no_message,
            nodes: &state.nodes,
            history: Some(&history),
        };
        let holds = matches!(self.expr.eval_in(&env), Ok(Value::Bool(true)));
        (holds, history.why.into_inner())
    }
}

/// The memory history built-ins are judged against, and the first reason one gave for failing.
struct Judging<'a> {
    memory: &'a Memory,
    why: std::cell::RefCell<Option<String>>,
}

/// Two conditions are the same when their text is.
impl PartialEq for Condition {
    fn eq(&self, other: &Condition) -> bool {
        self.text == other.text
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for Condition {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Condition {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Condition, D::Error> {
        let text = String::deserialize(d)?;
        Condition::parse(&text).map_err(|e| serde::de::Error::custom(format!("`{text}`: {e}")))
    }
}

/// What an expression reads its variables from.
#[derive(Clone, Copy)]
struct Env<'a> {
    /// What `n.` names.
    node: NodeVars<'a>,
    msg: &'a Map<String, Value>,
    /// The global state's nodes, for `nK.` and `any`/`all`.
    nodes: &'a [NodeView],
    /// A condition's memory, for history built-ins.
    history: Option<&'a Judging<'a>>,
}

#[derive(Clone, Copy)]
enum NodeVars<'a> {
    None,
    /// A sets-file guard's receiving node.
    Vars(&'a Map<String, Value>),
    /// Node K of a global state: `alive` is whether it is up, `id` is K, and a down node has no
    /// other variables.
    View(usize, &'a NodeView),
}

impl NodeVars<'_> {
    fn get(self, name: &str) -> Value {
        match self {
            NodeVars::None => Value::Null,
            NodeVars::Vars(m) => m.get(name).cloned().unwrap_or(Value::Null),
            NodeVars::View(_, v) if name == "alive" => Value::Bool(v.alive),
            NodeVars::View(k, _) if name == "id" => Value::from(k),
            NodeVars::View(_, v) if !v.alive => Value::Null,
            NodeVars::View(_, v) => v.vars.get(name).cloned().unwrap_or(Value::Null),
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

    /// Evaluate with `n.` naming node `i` of `nodes` (history built-ins' arguments).
    pub(crate) fn eval_node(&self, nodes: &[NodeView], i: usize) -> Result<Value, EvalError> {
        let no_message = Map::new();
        self.eval_in(&Env {
            node: NodeVars::View(i, &nodes[i]),
            msg: &no_message,
            nodes,
            history: None,
        })
    }

    /// Evaluate against a node's variables and a message's fields.
    pub fn eval(
        &self,
        node: &Map<String, Value>,
        msg: &Map<String, Value>,
    ) -> Result<Value, EvalError> {
        self.eval_in(&Env {
            node: NodeVars::Vars(node),
            msg,
            nodes: &[],
            history: None,
        })
    }

    fn eval_in(&self, env: &Env) -> Result<Value, EvalError> {
        Ok(match self {
            Expr::Lit(v) => v.clone(),
            Expr::Var { scope, path } => {
                let mut v = match scope {
                    Scope::Node => env.node.get(&path[0]),
                    Scope::Msg => env.msg.get(&path[0]).cloned().unwrap_or(Value::Null),
                    Scope::At(k) => match env.nodes.get(*k) {
                        Some(view) => NodeVars::View(*k, view).get(&path[0]),
                        // A node the state does not have reads as a down one.
                        None if path[0] == "alive" => Value::Bool(false),
                        None if path[0] == "id" => Value::from(*k),
                        None => Value::Null,
                    },
                    Scope::Param(_) => {
                        return Err(EvalError(format!("{self}: a summary's parameter")))
                    }
                };
                for p in &path[1..] {
                    v = v.get(p).cloned().unwrap_or(Value::Null);
                }
                v
            }
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
            Expr::History(slot, h) => {
                let Some(judging) = env.history else {
                    return Err(EvalError(format!("{h} needs the run's history")));
                };
                match judging.memory.judge(*slot, h, env.nodes) {
                    Ok(()) => Value::Bool(true),
                    Err(why) => {
                        judging.why.borrow_mut().get_or_insert(why);
                        Value::Bool(false)
                    }
                }
            }
            Expr::Unique(v, k, c) => {
                let mut seen: Vec<(Value, Value)> = Vec::new();
                let mut unique = true;
                for (i, view) in env.nodes.iter().enumerate() {
                    let inner = Env {
                        node: NodeVars::View(i, view),
                        ..*env
                    };
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
            Expr::Quant(Quant::Count, e) => Value::from(
                env.nodes
                    .iter()
                    .enumerate()
                    .filter(|(i, view)| {
                        let inner = Env {
                            node: NodeVars::View(*i, view),
                            ..*env
                        };
                        matches!(e.eval_in(&inner), Ok(Value::Bool(true)))
                    })
                    .count(),
            ),
            Expr::Quant(q, e) => {
                let mut each = env.nodes.iter().enumerate().map(|(i, view)| {
                    let inner = Env {
                        node: NodeVars::View(i, view),
                        ..*env
                    };
                    matches!(e.eval_in(&inner), Ok(Value::Bool(true)))
                });
                Value::Bool(match q {
                    Quant::Any => each.any(|b| b),
                    _ => each.all(|b| b),
                })
            }
            Expr::Bin(a, op, b) => {
                let x = a.eval_in(env)?;
                match op {
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
                                let ord = match (&x, &y) {
                                    (Value::Number(_), Value::Number(_)) => int(&x)?.cmp(&int(&y)?),
                                    (Value::String(s), Value::String(t)) => {
                                        match (time_uuid(s), time_uuid(t)) {
                                            (Some(a), Some(b)) => a.cmp(&b),
                                            _ => s.cmp(t),
                                        }
                                    }
                                    _ => {
                                        return Err(EvalError(format!("cannot order {x} and {y}")))
                                    }
                                };
                                Value::Bool(match op {
                                    Op::Lt => ord.is_lt(),
                                    Op::Le => ord.is_le(),
                                    Op::Gt => ord.is_gt(),
                                    _ => ord.is_ge(),
                                })
                            }
                        }
                    }
                }
            }
        })
    }

    /// Does the guard hold? Evaluation errors count as "does not hold".
    pub fn holds(&self, node: &Map<String, Value>, msg: &Map<String, Value>) -> bool {
        matches!(self.eval(node, msg), Ok(Value::Bool(true)))
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    fn state(nodes: &[(bool, Value)]) -> GlobalState {
        let views = nodes
            .iter()
            .map(|(alive, v)| NodeView {
                alive: *alive,
                vars: obj(v.clone()),
            })
            .collect();
        GlobalState::new(views, &[])
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
    fn run(states: &[Vec<(bool, Value)>]) -> Vec<GlobalState> {
        states.iter().map(|s| state(s)).collect()
    }

    /// The result of checking each state in order with one memory.
    fn verdicts(c: &str, states: &[GlobalState]) -> Vec<Result<(), String>> {
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
            v[2].as_ref().unwrap_err().contains(
                "n1 has n.role = \"leader\" where n.id = 1, but n1 had \"follower\" earlier"
            ),
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
                    format!("`{name}(...)` remembers the run's history: it is for properties, not `when`")
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
}
