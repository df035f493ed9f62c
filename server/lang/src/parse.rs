//! Parsing: tokens into an [`Expr`], by recursive descent over the grammar in the crate's
//! documentation, refusing what each form ([`Mode`]) may not name, with limits on nesting
//! and depth.

use serde_json::Value;

use crate::ast::{Expr, Op, Quant, Scope};
use crate::history::History;
use crate::lex::{lex, Tok};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("column {column}: {message}")]
pub struct ParseError {
    /// 1-based column in the guard text.
    pub column: usize,
    pub message: String,
}

/// What is being parsed: the names it may use differ.
#[derive(Clone, Copy)]
pub(crate) enum Mode<'p> {
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
pub(crate) fn depth(e: &Expr) -> usize {
    let mut deepest = 0;
    let mut todo = vec![(e, 1)];
    while let Some((e, d)) = todo.pop() {
        deepest = deepest.max(d);
        todo.extend(e.children().into_iter().map(|c| (c, d + 1)));
    }
    deepest
}

pub(crate) fn parse_as(src: &str, mode: Mode) -> Result<Expr, ParseError> {
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
