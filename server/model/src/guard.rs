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

use std::fmt;

use serde_json::{Map, Value};

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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Node,
    Msg,
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
            Expr::Var { scope, path } => {
                let s = if *scope == Scope::Node { "n" } else { "m" };
                write!(f, "{s}.{}", path.join("."))
            }
            Expr::Not(e) => write!(f, "!{e}"),
            Expr::Neg(e) => write!(f, "-{e}"),
            Expr::Len(e) => write!(f, "len({e})"),
            Expr::Bin(a, op, b) => write!(f, "({a} {} {b})", op.text()),
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
                    ["<", ">", "!", "+", "-", "(", ")", "."]
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

struct Parser {
    toks: Vec<(usize, Tok)>,
    pos: usize,
    end_col: usize,
}

impl Parser {
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
    fn expect(&mut self, s: &str) -> Result<(), ParseError> {
        if self.eat(s) {
            Ok(())
        } else {
            self.err(format!("expected `{s}`"))
        }
    }
    fn binary(
        &mut self,
        ops: &[(&str, Op)],
        next: fn(&mut Parser) -> Result<Expr, ParseError>,
        repeat: bool,
    ) -> Result<Expr, ParseError> {
        let mut left = next(self)?;
        loop {
            let Some(&(_, op)) = ops.iter().find(|(s, _)| self.at(s)) else {
                return Ok(left);
            };
            self.pos += 1;
            let right = next(self)?;
            left = Expr::Bin(Box::new(left), op, Box::new(right));
            if !repeat {
                return Ok(left);
            }
        }
    }
    fn or(&mut self) -> Result<Expr, ParseError> {
        self.binary(&[("||", Op::Or)], Parser::and, true)
    }
    fn and(&mut self) -> Result<Expr, ParseError> {
        self.binary(&[("&&", Op::And)], Parser::not, true)
    }
    fn not(&mut self) -> Result<Expr, ParseError> {
        if self.eat("!") {
            return Ok(Expr::Not(Box::new(self.not()?)));
        }
        self.cmp()
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
        if self.eat("-") {
            return Ok(Expr::Neg(Box::new(self.unary()?)));
        }
        self.atom()
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
                "n" | "m" => {
                    let scope = if id == "n" { Scope::Node } else { Scope::Msg };
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
                    if path.is_empty() {
                        self.pos -= 1;
                        return self.err(format!("`{id}` must be followed by `.name`"));
                    }
                    Ok(Expr::Var { scope, path })
                }
                other => {
                    self.pos -= 1;
                    self.err(format!("unknown name `{other}` (use n.<var>, m.<field>, true, false, null, len(...))"))
                }
            },
            Tok::Sym(s) => {
                self.pos -= 1;
                self.err(format!("unexpected `{s}`"))
            }
        }
    }
}

/// Parse a guard.
pub fn parse(src: &str) -> Result<Expr, ParseError> {
    let toks = lex(src)?;
    let mut p = Parser {
        toks,
        pos: 0,
        end_col: src.chars().count() + 1,
    };
    let e = p.or()?;
    if p.pos < p.toks.len() {
        return p.err("unexpected text after the expression");
    }
    Ok(e)
}

impl Expr {
    /// Every `n.` (node) or `m.` (message) variable the expression reads: the first path element.
    pub fn vars(&self, scope: Scope, out: &mut Vec<String>) {
        match self {
            Expr::Var { scope: s, path } if *s == scope => out.push(path[0].clone()),
            Expr::Not(e) | Expr::Neg(e) | Expr::Len(e) => e.vars(scope, out),
            Expr::Bin(a, _, b) => {
                a.vars(scope, out);
                b.vars(scope, out);
            }
            _ => {}
        }
    }

    /// Evaluate against a node's variables and a message's fields.
    pub fn eval(
        &self,
        node: &Map<String, Value>,
        msg: &Map<String, Value>,
    ) -> Result<Value, EvalError> {
        Ok(match self {
            Expr::Lit(v) => v.clone(),
            Expr::Var { scope, path } => {
                let root = if *scope == Scope::Node { node } else { msg };
                let mut v = root.get(&path[0]).cloned().unwrap_or(Value::Null);
                for p in &path[1..] {
                    v = v.get(p).cloned().unwrap_or(Value::Null);
                }
                v
            }
            Expr::Not(e) => Value::Bool(!truthy(&e.eval(node, msg)?)?),
            Expr::Neg(e) => Value::from(-int(&e.eval(node, msg)?)?),
            Expr::Len(e) => match e.eval(node, msg)? {
                Value::Array(a) => a.len().into(),
                Value::String(s) => s.chars().count().into(),
                Value::Object(o) => o.len().into(),
                Value::Null => 0.into(),
                other => return Err(EvalError(format!("len() of {other}"))),
            },
            Expr::Bin(a, op, b) => {
                let x = a.eval(node, msg)?;
                match op {
                    // Short-circuit, so `n.x != null && n.x > 1` is safe.
                    Op::And => Value::Bool(truthy(&x)? && truthy(&b.eval(node, msg)?)?),
                    Op::Or => Value::Bool(truthy(&x)? || truthy(&b.eval(node, msg)?)?),
                    _ => {
                        let y = b.eval(node, msg)?;
                        match op {
                            Op::Eq => Value::Bool(x == y),
                            Op::Ne => Value::Bool(x != y),
                            Op::Add => Value::from(int(&x)? + int(&y)?),
                            Op::Sub => Value::from(int(&x)? - int(&y)?),
                            _ => {
                                let ord = match (&x, &y) {
                                    (Value::Number(_), Value::Number(_)) => int(&x)?.cmp(&int(&y)?),
                                    (Value::String(s), Value::String(t)) => s.cmp(t),
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

fn truthy(v: &Value) -> Result<bool, EvalError> {
    match v {
        Value::Bool(b) => Ok(*b),
        other => Err(EvalError(format!("{other} is not true or false"))),
    }
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
}
