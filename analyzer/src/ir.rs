//! The language-neutral intermediate form both front ends (Java through tree-sitter, Rust through
//! syn) lower to, and the analysis runs on. It keeps what the analysis needs (classes, fields,
//! methods, statements, expressions with their source lines) and folds everything else into
//! `Opaque` nodes that still carry their sub-expressions, so values flowing through constructs the
//! analysis does not model are not lost.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// An annotation: `@FlyMCNodeState(name = "epoch")` in Java, `/// @FlyMCNodeState(name = "epoch")`
/// in a Rust doc comment. `args` holds `key = "value"` pairs; a lone value is stored as `value`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Annot {
    pub name: String,
    pub args: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Default)]
pub struct Field {
    pub name: String,
    /// Simple type name, generics and references stripped (`Map<Long, Vote>` -> `Map`).
    pub ty: Option<String>,
    pub is_static: bool,
    pub is_final: bool,
    pub init: Option<Expr>,
    pub annots: Vec<Annot>,
    pub line: usize,
}

#[derive(Clone, Debug, Default)]
pub struct Param {
    pub name: String,
    pub ty: Option<String>,
    /// Java `T... xs`: takes any number of trailing arguments (`ty` is the element type).
    pub varargs: bool,
}

#[derive(Clone, Debug, Default)]
pub struct Method {
    pub name: String,
    pub class: String,
    pub params: Vec<Param>,
    /// The declared return type (simple name), if any.
    pub ret: Option<String>,
    pub body: Option<Block>,
    pub annots: Vec<Annot>,
    pub is_static: bool,
    pub file: PathBuf,
    pub line: usize,
}

/// An enum variant (Rust) or constant (Java) with its named fields.
#[derive(Clone, Debug, Default)]
pub struct Variant {
    pub name: String,
    pub fields: Vec<String>,
    /// The fields' types (simple names) where known, in the order of `fields`.
    pub types: Vec<Option<String>>,
}

#[derive(Clone, Debug, Default)]
pub struct Class {
    pub name: String,
    /// The class this one is nested in (Java inner and nested classes).
    pub outer: Option<String>,
    pub supers: Vec<String>,
    pub file: PathBuf,
    pub line: usize,
    pub fields: BTreeMap<String, Field>,
    pub methods: Vec<Method>,
    pub annots: Vec<Annot>,
    pub is_enum: bool,
    pub variants: Vec<Variant>,
    /// serde's `rename_all` on a Rust enum: how its variants are spelled as values.
    pub rename_all: Option<String>,
}

/// All classes of the analysed sources, by simple name.
#[derive(Clone, Debug, Default)]
pub struct Program {
    pub classes: BTreeMap<String, Class>,
    /// Free functions (Rust), by name.
    pub functions: BTreeMap<String, Method>,
    /// The side file's wrappers some type in the sources was seen through (Rust).
    pub unwrapped: std::collections::BTreeSet<String>,
}

#[derive(Clone, Debug, Default)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    /// The value of a Rust block (its trailing expression).
    pub tail: Option<Box<Expr>>,
}

#[derive(Clone, Debug)]
pub struct Stmt {
    /// Unique within a program.
    pub id: usize,
    pub line: usize,
    pub kind: StmtKind,
}

#[derive(Clone, Debug)]
pub struct Catch {
    pub types: Vec<String>,
    pub var: String,
    pub body: Block,
    pub annots: Vec<Annot>,
    pub line: usize,
}

#[derive(Clone, Debug)]
pub struct Arm {
    /// Alternatives; empty means `default` / `_`.
    pub pats: Vec<Pat>,
    pub guard: Option<Expr>,
    pub body: Block,
}

#[derive(Clone, Debug)]
pub enum StmtKind {
    Local {
        pat: Pat,
        ty: Option<String>,
        init: Option<Expr>,
        annots: Vec<Annot>,
        /// Rust `let PAT = e else { ... };`
        els: Option<Block>,
    },
    Expr(Expr),
    If {
        cond: Expr,
        then: Block,
        els: Option<Block>,
    },
    /// Java `switch` (with fall-through when `fallthrough`) and Rust `match`.
    Match {
        subject: Expr,
        arms: Vec<Arm>,
        fallthrough: bool,
    },
    /// `while`, `do`, `for(;;)`, `loop`: `init` runs once, `cond` before each iteration
    /// (`None`: always true), `update` after each.
    Loop {
        label: Option<String>,
        init: Vec<Stmt>,
        cond: Option<Expr>,
        update: Vec<Expr>,
        body: Block,
    },
    /// `for (T x : e)` / `for x in e`.
    ForEach {
        label: Option<String>,
        pat: Pat,
        ty: Option<String>,
        iter: Expr,
        body: Block,
    },
    Return(Option<Expr>),
    Break(Option<String>),
    Continue(Option<String>),
    Throw(Expr),
    Try {
        body: Block,
        catches: Vec<Catch>,
        finally: Option<Block>,
    },
    Block(Block),
    /// Something the front end does not model (still holding the expressions it contains).
    Opaque(Vec<Expr>),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Lit {
    Int(i64),
    Str(String),
    Bool(bool),
    Null,
    /// Floats, chars and other literals the guard language cannot express.
    Other,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    And,
    Or,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Not,
    Neg,
    /// `~`, `+`, dereference, borrow: value-preserving or not expressible.
    Other,
}

#[derive(Clone, Debug)]
pub enum Pat {
    /// `_`, `default`, `..`
    Wild,
    Bind(String),
    /// A literal or constant (a Java case label, a Rust literal or path pattern).
    Const(Expr),
    /// `Enum::Variant { a, b: x }` / `Variant(x, y)` / `Some(x)`; positional fields are "0", "1", ...
    Variant {
        path: Vec<String>,
        fields: Vec<(String, Pat)>,
        /// `..` present, or a struct pattern: fields not listed are ignored.
        rest: bool,
    },
    Tuple(Vec<Pat>),
    Or(Vec<Pat>),
    /// A pattern the analysis cannot model (ranges, slices, ...): may or may not match.
    Opaque,
}

#[derive(Clone, Debug)]
pub enum Expr {
    Lit(Lit),
    Name(String),
    This,
    /// A Rust path of two or more segments (`Role::Leader`, `Msg::RequestVote`).
    Path(Vec<String>),
    Field(Box<Expr>, String),
    Index(Box<Expr>, Box<Expr>),
    /// `recv.name(args)`, or `name(args)` when `recv` is `None`, or `Type::name(args)` with a
    /// `Path`/`Name` receiver naming a type.
    Call {
        recv: Option<Box<Expr>>,
        name: String,
        args: Vec<Expr>,
        line: usize,
    },
    /// `new T(args)` (Java).
    New {
        ty: String,
        args: Vec<Expr>,
        line: usize,
    },
    /// A Rust struct or enum-variant literal, or a tuple-variant constructor call.
    Struct {
        path: Vec<String>,
        fields: Vec<(String, Expr)>,
    },
    Unary(UnOp, Box<Expr>),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    Assign {
        target: Box<Expr>,
        op: Option<BinOp>,
        value: Box<Expr>,
    },
    /// `x++`, `--x`.
    IncDec {
        target: Box<Expr>,
        inc: bool,
    },
    /// `c ? a : b`, with its line (an opaque condition is reported there).
    Cond(Box<Expr>, Box<Expr>, Box<Expr>, usize),
    InstanceOf(Box<Expr>, String),
    Lambda {
        params: Vec<String>,
        body: Block,
    },
    Tuple(Vec<Expr>),
    /// A statement used as a value (Rust `if`/`match`/block expressions, Java switch expressions).
    Stmt(Box<Stmt>),
    /// Rust `e?`: the value of `e`, or an early return.
    Try(Box<Expr>),
    /// Rust `if let PAT = e` conditions.
    Let(Box<Pat>, Box<Expr>),
    Opaque(Vec<Expr>),
}

impl Block {
    pub fn new(stmts: Vec<Stmt>) -> Block {
        Block { stmts, tail: None }
    }
}

/// The name a Rust enum variant or Java enum constant has as a value (serde `rename_all`).
pub fn rename(name: &str, rule: Option<&str>) -> String {
    match rule {
        Some("snake_case") => snake(name),
        Some("lowercase") => name.to_lowercase(),
        Some("UPPERCASE") => name.to_uppercase(),
        Some("SCREAMING_SNAKE_CASE") => snake(name).to_uppercase(),
        Some("kebab-case") => snake(name).replace('_', "-"),
        Some("camelCase") => {
            let mut c = name.chars();
            c.next()
                .map(|f| f.to_lowercase().collect::<String>() + c.as_str())
                .unwrap_or_default()
        }
        _ => name.to_string(),
    }
}

/// `RequestVoteResponse` -> `request_vote_response`.
pub fn snake(name: &str) -> String {
    let mut out = String::new();
    for (i, ch) in name.chars().enumerate() {
        if ch.is_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.extend(ch.to_lowercase());
        } else {
            out.push(ch);
        }
    }
    out
}

/// A statement list directly nested in a statement (see [`Stmt::children`]).
#[derive(Clone, Copy, Debug)]
pub enum Child<'a> {
    /// Block `c` of the statement, numbered as a region path (`exec::Step::Into`) addresses
    /// it: `then` 0 and `else` 1; a loop's body 0; arm `c` of a match; a try's body 0, its
    /// catches 1 to n and its `finally` n + 1; a block 0; the `else` of a `let ... else` 0.
    Block(usize, &'a Block),
    /// A `for(;;)` loop's init statements: they run once before the body and are no block, so
    /// no region path can enter them.
    Init(&'a [Stmt]),
}

impl<'a> Child<'a> {
    pub fn stmts(&self) -> &'a [Stmt] {
        match self {
            Child::Block(_, b) => &b.stmts,
            Child::Init(s) => s,
        }
    }
    /// A Rust block's trailing expression (none for loop init statements).
    pub fn tail(&self) -> Option<&'a Expr> {
        match self {
            Child::Block(_, b) => b.tail.as_deref(),
            Child::Init(_) => None,
        }
    }
}

impl Stmt {
    /// The one IR statement visitor: every statement list directly nested in this statement,
    /// in source order. Walkers recurse through it, so they all agree on what is nested where.
    pub fn children(&self) -> Vec<Child<'_>> {
        match &self.kind {
            StmtKind::If { then, els, .. } => {
                let mut out = vec![Child::Block(0, then)];
                out.extend(els.iter().map(|b| Child::Block(1, b)));
                out
            }
            StmtKind::Loop { init, body, .. } => vec![Child::Init(init), Child::Block(0, body)],
            StmtKind::ForEach { body, .. } | StmtKind::Block(body) => vec![Child::Block(0, body)],
            StmtKind::Local { els, .. } => els.iter().map(|b| Child::Block(0, b)).collect(),
            StmtKind::Match { arms, .. } => arms
                .iter()
                .enumerate()
                .map(|(c, a)| Child::Block(c, &a.body))
                .collect(),
            StmtKind::Try {
                body,
                catches,
                finally,
            } => std::iter::once(body)
                .chain(catches.iter().map(|c| &c.body))
                .chain(finally.iter())
                .enumerate()
                .map(|(c, b)| Child::Block(c, b))
                .collect(),
            StmtKind::Expr(_)
            | StmtKind::Return(_)
            | StmtKind::Break(_)
            | StmtKind::Continue(_)
            | StmtKind::Throw(_)
            | StmtKind::Opaque(_) => vec![],
        }
    }

    /// Block `c` of this statement (see [`Child::Block`]).
    pub fn child_block(&self, c: usize) -> Option<&Block> {
        self.children().into_iter().find_map(|ch| match ch {
            Child::Block(i, b) if i == c => Some(b),
            _ => None,
        })
    }

    /// The expressions this statement holds itself, outside its nested statement lists.
    pub fn exprs(&self) -> Vec<&Expr> {
        match &self.kind {
            StmtKind::Local { init, .. } => init.iter().collect(),
            StmtKind::Expr(e) | StmtKind::Throw(e) => vec![e],
            StmtKind::If { cond, .. } => vec![cond],
            StmtKind::Match { subject, arms, .. } => std::iter::once(subject)
                .chain(arms.iter().filter_map(|a| a.guard.as_ref()))
                .collect(),
            StmtKind::Loop { cond, update, .. } => cond.iter().chain(update).collect(),
            StmtKind::ForEach { iter, .. } => vec![iter],
            StmtKind::Return(e) => e.iter().collect(),
            StmtKind::Opaque(es) => es.iter().collect(),
            StmtKind::Break(_)
            | StmtKind::Continue(_)
            | StmtKind::Try { .. }
            | StmtKind::Block(_) => vec![],
        }
    }
}

/// Does a call named `name` occur anywhere in the statement, nested statements and
/// expressions (lambda bodies, statements used as values) included?
pub fn stmt_contains_call(stmt: &Stmt, name: &str) -> bool {
    fn in_expr(e: &Expr, name: &str) -> bool {
        match e {
            Expr::Call {
                recv,
                name: n,
                args,
                ..
            } => {
                n == name
                    || recv.as_deref().is_some_and(|r| in_expr(r, name))
                    || args.iter().any(|a| in_expr(a, name))
            }
            Expr::Field(a, _) | Expr::Unary(_, a) | Expr::IncDec { target: a, .. } => {
                in_expr(a, name)
            }
            Expr::Try(a) | Expr::InstanceOf(a, _) => in_expr(a, name),
            Expr::Index(a, b) | Expr::Bin(_, a, b) => in_expr(a, name) || in_expr(b, name),
            Expr::Assign { target, value, .. } => in_expr(target, name) || in_expr(value, name),
            Expr::Cond(a, b, c, _) => in_expr(a, name) || in_expr(b, name) || in_expr(c, name),
            Expr::New { args, .. } | Expr::Tuple(args) | Expr::Opaque(args) => {
                args.iter().any(|a| in_expr(a, name))
            }
            Expr::Struct { fields, .. } => fields.iter().any(|(_, a)| in_expr(a, name)),
            Expr::Lambda { body, .. } => in_block(body, name),
            Expr::Stmt(s) => in_stmt(s, name),
            Expr::Let(_, e) => in_expr(e, name),
            Expr::Lit(_) | Expr::Name(_) | Expr::This | Expr::Path(_) => false,
        }
    }
    fn in_block(b: &Block, name: &str) -> bool {
        b.stmts.iter().any(|s| in_stmt(s, name))
            || b.tail.as_deref().is_some_and(|e| in_expr(e, name))
    }
    fn in_stmt(s: &Stmt, name: &str) -> bool {
        s.exprs().into_iter().any(|e| in_expr(e, name))
            || s.children().iter().any(|c| {
                c.stmts().iter().any(|s| in_stmt(s, name))
                    || c.tail().is_some_and(|e| in_expr(e, name))
            })
    }
    in_stmt(stmt, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stmt(kind: StmtKind) -> Stmt {
        Stmt {
            id: 0,
            line: 1,
            kind,
        }
    }

    fn block(n: usize) -> Block {
        Block::new((0..n).map(|_| stmt(StmtKind::Break(None))).collect())
    }

    fn numbers(s: &Stmt) -> Vec<(Option<usize>, usize)> {
        s.children()
            .iter()
            .map(|c| match c {
                Child::Block(i, b) => (Some(*i), b.stmts.len()),
                Child::Init(s) => (None, s.len()),
            })
            .collect()
    }

    #[test]
    fn children_are_numbered_as_region_paths_enter_them() {
        let catch = |n| Catch {
            types: vec![],
            var: "e".into(),
            body: block(n),
            annots: vec![],
            line: 1,
        };
        let t = stmt(StmtKind::Try {
            body: block(1),
            catches: vec![catch(2), catch(3)],
            finally: Some(block(4)),
        });
        assert_eq!(
            numbers(&t),
            [(Some(0), 1), (Some(1), 2), (Some(2), 3), (Some(3), 4)]
        );
        assert_eq!(t.child_block(3).map(|b| b.stmts.len()), Some(4));
        assert!(t.child_block(4).is_none());
        let l = stmt(StmtKind::Loop {
            label: None,
            init: vec![stmt(StmtKind::Continue(None))],
            cond: Some(Expr::Lit(Lit::Bool(true))),
            update: vec![Expr::Name("i".into())],
            body: block(2),
        });
        // The init statements are a child, but not a block a region path can enter.
        assert_eq!(numbers(&l), [(None, 1), (Some(0), 2)]);
        assert_eq!(l.exprs().len(), 2);
        let i = stmt(StmtKind::If {
            cond: Expr::Name("c".into()),
            then: block(1),
            els: None,
        });
        assert_eq!(numbers(&i), [(Some(0), 1)]);
    }

    #[test]
    fn a_call_is_found_in_nested_blocks_and_expressions() {
        let call = |n: &str| Expr::Call {
            recv: None,
            name: n.into(),
            args: vec![],
            line: 1,
        };
        let mut body = block(0);
        body.tail = Some(Box::new(call("inner")));
        let s = stmt(StmtKind::If {
            cond: call("cond"),
            then: body,
            els: None,
        });
        assert!(stmt_contains_call(&s, "cond") && stmt_contains_call(&s, "inner"));
        assert!(!stmt_contains_call(&s, "other"));
    }
}
