//! The Rust front end: syn's syntax tree lowered to [`crate::ir`].
//!
//! Structs and enums become classes (enum variants keep their field names and serde's
//! `rename_all`), `impl` blocks give them methods, free functions are kept by name. In-source
//! annotations are doc-comment markers (`/// @FlyMCNodeState`), since Rust has no inert custom
//! attributes. A file syn cannot parse is skipped and reported with its line and column.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use quote::ToTokens;
use syn::spanned::Spanned;

use crate::ir::*;
use crate::Gap;

struct Ctx<'a> {
    file: &'a Path,
    next_id: &'a mut usize,
    /// Generic wrappers that stand for their first type argument (`Valid<RaftState>` is a
    /// `RaftState` through `Deref`), named in the side file.
    wrappers: &'a BTreeSet<String>,
    /// The wrappers seen through.
    unwrapped: std::cell::RefCell<BTreeSet<String>>,
}

impl Ctx<'_> {
    /// A type's simple name, seen through the declared wrappers.
    fn ty(&self, t: &syn::Type) -> Option<String> {
        match t {
            syn::Type::Reference(r) => self.ty(&r.elem),
            syn::Type::Paren(p) => self.ty(&p.elem),
            syn::Type::Group(g) => self.ty(&g.elem),
            syn::Type::Path(p) => {
                let last = p.path.segments.last()?;
                let name = last.ident.to_string();
                if self.wrappers.contains(&name) {
                    if let syn::PathArguments::AngleBracketed(a) = &last.arguments {
                        if let Some(inner) = a.args.iter().find_map(|g| match g {
                            syn::GenericArgument::Type(t) => Some(t),
                            _ => None,
                        }) {
                            self.unwrapped.borrow_mut().insert(name);
                            return self.ty(inner);
                        }
                    }
                }
                Some(name)
            }
            _ => None,
        }
    }

    fn stmt(&mut self, line: usize, kind: StmtKind) -> Stmt {
        *self.next_id += 1;
        Stmt {
            id: *self.next_id,
            line,
            kind,
        }
    }
}

fn line_of<T: Spanned>(t: &T) -> usize {
    t.span().start().line
}

pub fn parse_file(
    file: &Path,
    text: &str,
    prog: &mut Program,
    next_id: &mut usize,
    wrappers: &BTreeSet<String>,
) -> Result<Vec<Gap>, String> {
    let ast = match syn::parse_file(text) {
        Ok(a) => a,
        Err(e) => {
            let p = e.span().start();
            return Ok(vec![Gap {
                file: file.to_path_buf(),
                line: p.line,
                column: p.column + 1,
                message: format!("syntax error: {e}; the file was skipped"),
            }]);
        }
    };
    let mut ctx = Ctx {
        file,
        next_id,
        wrappers,
        unwrapped: Default::default(),
    };
    items(&mut ctx, &ast.items, prog);
    prog.unwrapped.extend(ctx.unwrapped.into_inner());
    Ok(vec![])
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.path().is_ident("cfg") && a.to_token_stream().to_string().contains("test"))
}

/// `/// @FlyMCNodeState(name = "x", persistent = true)` markers in doc comments.
fn annots(attrs: &[syn::Attribute]) -> Vec<Annot> {
    let mut out = Vec::new();
    for a in attrs {
        if !a.path().is_ident("doc") {
            continue;
        }
        if let syn::Meta::NameValue(nv) = &a.meta {
            if let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) = &nv.value
            {
                out.extend(parse_markers(&s.value()));
            }
        }
    }
    out
}

/// Parse `@Name` / `@Name(k = "v", k2 = true)` markers out of text.
pub fn parse_markers(text: &str) -> Vec<Annot> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("@FlyMC") {
        let s = &rest[i + 1..];
        let name: String = s
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let after = &s[name.len()..];
        let mut args = BTreeMap::new();
        if let Some(inner) = after.strip_prefix('(') {
            if let Some(end) = inner.find(')') {
                for part in inner[..end].split(',') {
                    let part = part.trim();
                    if part.is_empty() {
                        continue;
                    }
                    match part.split_once('=') {
                        Some((k, v)) => args
                            .insert(k.trim().to_string(), v.trim().trim_matches('"').to_string()),
                        None => args.insert("value".into(), part.trim_matches('"').to_string()),
                    };
                }
            }
        }
        rest = &s[name.len()..];
        out.push(Annot { name, args });
    }
    out
}

fn serde_rename_all(attrs: &[syn::Attribute]) -> Option<String> {
    for a in attrs {
        if a.path().is_ident("serde") {
            let t = a.to_token_stream().to_string();
            if let Some(i) = t.find("rename_all") {
                let rest = &t[i..];
                let q1 = rest.find('"')?;
                let q2 = rest[q1 + 1..].find('"')?;
                return Some(rest[q1 + 1..q1 + 1 + q2].to_string());
            }
        }
    }
    None
}

pub fn simple_type(t: &syn::Type) -> Option<String> {
    match t {
        syn::Type::Reference(r) => simple_type(&r.elem),
        syn::Type::Paren(p) => simple_type(&p.elem),
        syn::Type::Group(g) => simple_type(&g.elem),
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

fn items(ctx: &mut Ctx, list: &[syn::Item], prog: &mut Program) {
    for it in list {
        match it {
            syn::Item::Struct(s) if !is_cfg_test(&s.attrs) => {
                let name = s.ident.to_string();
                let c = prog.classes.entry(name.clone()).or_default();
                c.name = name.clone();
                c.file = ctx.file.to_path_buf();
                c.line = line_of(&s.ident);
                c.annots = annots(&s.attrs);
                for (i, f) in s.fields.iter().enumerate() {
                    let fname = f
                        .ident
                        .as_ref()
                        .map(|x| x.to_string())
                        .unwrap_or_else(|| i.to_string());
                    c.fields.insert(
                        fname.clone(),
                        Field {
                            name: fname,
                            ty: ctx.ty(&f.ty),
                            annots: annots(&f.attrs),
                            line: line_of(f),
                            ..Field::default()
                        },
                    );
                }
            }
            syn::Item::Enum(e) if !is_cfg_test(&e.attrs) => {
                let name = e.ident.to_string();
                let c = prog.classes.entry(name.clone()).or_default();
                c.name = name;
                c.file = ctx.file.to_path_buf();
                c.line = line_of(&e.ident);
                c.annots = annots(&e.attrs);
                c.is_enum = true;
                c.rename_all = serde_rename_all(&e.attrs);
                for v in &e.variants {
                    let types = v.fields.iter().map(|f| ctx.ty(&f.ty)).collect();
                    c.variants.push(Variant {
                        name: v.ident.to_string(),
                        types,
                        fields: v
                            .fields
                            .iter()
                            .enumerate()
                            .map(|(i, f)| {
                                f.ident
                                    .as_ref()
                                    .map(|x| x.to_string())
                                    .unwrap_or_else(|| i.to_string())
                            })
                            .collect(),
                    });
                }
            }
            syn::Item::Const(k) if !is_cfg_test(&k.attrs) => {
                // module-level constants: kept on a pseudo class "" is not possible; store as a
                // free function returning the value so `NODES` evaluates through a call? Keep it
                // simple: a field of the pseudo class `crate`.
                let c = prog.classes.entry("crate".into()).or_default();
                c.name = "crate".into();
                let init = Some(expr(ctx, &k.expr));
                c.fields.insert(
                    k.ident.to_string(),
                    Field {
                        name: k.ident.to_string(),
                        ty: ctx.ty(&k.ty),
                        is_static: true,
                        is_final: true,
                        init,
                        line: line_of(&k.ident),
                        ..Field::default()
                    },
                );
            }
            syn::Item::Impl(i) if !is_cfg_test(&i.attrs) => {
                let Some(ty) = simple_type(&i.self_ty) else {
                    continue;
                };
                let mut methods = Vec::new();
                let mut consts = Vec::new();
                for ii in &i.items {
                    match ii {
                        syn::ImplItem::Fn(f) => {
                            methods.push(func(ctx, &f.sig, &f.block, &f.attrs, &ty));
                        }
                        syn::ImplItem::Const(k) => {
                            consts.push((k.ident.to_string(), expr(ctx, &k.expr)))
                        }
                        _ => {}
                    }
                }
                let c = prog.classes.entry(ty.clone()).or_default();
                c.name = ty;
                if c.file.as_os_str().is_empty() {
                    c.file = ctx.file.to_path_buf();
                }
                if let Some((_, tr, _)) = &i.trait_ {
                    if let Some(s) = tr.segments.last() {
                        let s = s.ident.to_string();
                        if !c.supers.contains(&s) {
                            c.supers.push(s);
                        }
                    }
                }
                c.methods.extend(methods);
                for (n, e) in consts {
                    c.fields.insert(
                        n.clone(),
                        Field {
                            name: n,
                            is_static: true,
                            is_final: true,
                            init: Some(e),
                            ..Field::default()
                        },
                    );
                }
            }
            syn::Item::Fn(f) if !is_cfg_test(&f.attrs) => {
                let m = func(ctx, &f.sig, &f.block, &f.attrs, "");
                prog.functions.insert(m.name.clone(), m);
            }
            syn::Item::Mod(m) if !is_cfg_test(&m.attrs) => {
                if let Some((_, list)) = &m.content {
                    items(ctx, list, prog);
                }
            }
            _ => {}
        }
    }
}

fn func(
    ctx: &mut Ctx,
    sig: &syn::Signature,
    body: &syn::Block,
    attrs: &[syn::Attribute],
    class: &str,
) -> Method {
    let mut params = Vec::new();
    let mut is_static = true;
    for a in &sig.inputs {
        match a {
            syn::FnArg::Receiver(_) => is_static = false,
            syn::FnArg::Typed(t) => {
                let name = match &*t.pat {
                    syn::Pat::Ident(i) => i.ident.to_string(),
                    _ => "_".into(),
                };
                params.push(Param {
                    name,
                    ty: ctx.ty(&t.ty),
                    varargs: false,
                });
            }
        }
    }
    let ret = match &sig.output {
        syn::ReturnType::Type(_, t) => ctx.ty(t),
        syn::ReturnType::Default => None,
    };
    Method {
        name: sig.ident.to_string(),
        class: class.to_string(),
        params,
        ret,
        body: Some(block(ctx, body)),
        annots: annots(attrs),
        is_static,
        file: ctx.file.to_path_buf(),
        line: line_of(&sig.ident),
    }
}

fn block(ctx: &mut Ctx, b: &syn::Block) -> Block {
    let mut stmts = Vec::new();
    let mut tail = None;
    let n = b.stmts.len();
    for (i, s) in b.stmts.iter().enumerate() {
        match s {
            syn::Stmt::Local(l) => {
                let (p, ty) = pat_with_type(ctx, &l.pat);
                let init = l.init.as_ref().map(|i| expr(ctx, &i.expr));
                let els = l
                    .init
                    .as_ref()
                    .and_then(|i| i.diverge.as_ref())
                    .map(|(_, e)| expr_block(ctx, e));
                let st = ctx.stmt(
                    line_of(l),
                    StmtKind::Local {
                        pat: pat(&p),
                        ty,
                        init,
                        annots: annots(&l.attrs),
                        els,
                    },
                );
                stmts.push(st);
            }
            syn::Stmt::Item(_) => {}
            syn::Stmt::Expr(e, semi) => {
                if semi.is_none() && i + 1 == n {
                    tail = Some(Box::new(expr(ctx, e)));
                } else {
                    let st = stmt_of_expr(ctx, e);
                    stmts.push(st);
                }
            }
            syn::Stmt::Macro(m) => {
                let e = macro_expr(ctx, &m.mac);
                let st = ctx.stmt(line_of(m), StmtKind::Expr(e));
                stmts.push(st);
            }
        }
    }
    Block { stmts, tail }
}

fn expr_block(ctx: &mut Ctx, e: &syn::Expr) -> Block {
    match e {
        syn::Expr::Block(b) => block(ctx, &b.block),
        other => Block {
            stmts: vec![],
            tail: Some(Box::new(expr(ctx, other))),
        },
    }
}

fn pat_with_type(ctx: &Ctx, p: &syn::Pat) -> (syn::Pat, Option<String>) {
    match p {
        syn::Pat::Type(t) => ((*t.pat).clone(), ctx.ty(&t.ty)),
        other => (other.clone(), None),
    }
}

/// Statements that are expressions (if, match, loops, ...) get their statement form.
fn stmt_of_expr(ctx: &mut Ctx, e: &syn::Expr) -> Stmt {
    let line = line_of(e);
    match expr(ctx, e) {
        Expr::Stmt(s) => *s,
        other => ctx.stmt(line, StmtKind::Expr(other)),
    }
}

fn path_segs(p: &syn::Path) -> Vec<String> {
    p.segments.iter().map(|s| s.ident.to_string()).collect()
}

fn label(l: &Option<syn::Label>) -> Option<String> {
    l.as_ref().map(|l| l.name.ident.to_string())
}

fn lifetime(l: &Option<syn::Lifetime>) -> Option<String> {
    l.as_ref().map(|l| l.ident.to_string())
}

fn macro_expr(ctx: &mut Ctx, m: &syn::Macro) -> Expr {
    use syn::punctuated::Punctuated;
    let parsed: Result<Punctuated<syn::Expr, syn::Token![,]>, _> =
        m.parse_body_with(Punctuated::parse_terminated);
    match parsed {
        Ok(list) => Expr::Opaque(list.iter().map(|e| expr(ctx, e)).collect()),
        Err(_) => {
            // `vec![x; n]`
            let rep: Result<syn::ExprRepeat, _> = syn::parse2(quote::quote!([#m]));
            let _ = rep;
            Expr::Opaque(vec![])
        }
    }
}

fn binop(op: &syn::BinOp) -> (Option<BinOp>, bool) {
    use syn::BinOp as B;
    match op {
        B::Add(_) => (Some(BinOp::Add), false),
        B::Sub(_) => (Some(BinOp::Sub), false),
        B::Mul(_) => (Some(BinOp::Mul), false),
        B::Div(_) => (Some(BinOp::Div), false),
        B::Rem(_) => (Some(BinOp::Rem), false),
        B::And(_) => (Some(BinOp::And), false),
        B::Or(_) => (Some(BinOp::Or), false),
        B::BitXor(_) => (Some(BinOp::BitXor), false),
        B::BitAnd(_) => (Some(BinOp::BitAnd), false),
        B::BitOr(_) => (Some(BinOp::BitOr), false),
        B::Shl(_) => (Some(BinOp::Shl), false),
        B::Shr(_) => (Some(BinOp::Shr), false),
        B::Eq(_) => (Some(BinOp::Eq), false),
        B::Lt(_) => (Some(BinOp::Lt), false),
        B::Le(_) => (Some(BinOp::Le), false),
        B::Ne(_) => (Some(BinOp::Ne), false),
        B::Ge(_) => (Some(BinOp::Ge), false),
        B::Gt(_) => (Some(BinOp::Gt), false),
        B::AddAssign(_) => (Some(BinOp::Add), true),
        B::SubAssign(_) => (Some(BinOp::Sub), true),
        B::MulAssign(_) => (Some(BinOp::Mul), true),
        B::DivAssign(_) => (Some(BinOp::Div), true),
        B::RemAssign(_) => (Some(BinOp::Rem), true),
        B::BitXorAssign(_) => (Some(BinOp::BitXor), true),
        B::BitAndAssign(_) => (Some(BinOp::BitAnd), true),
        B::BitOrAssign(_) => (Some(BinOp::BitOr), true),
        B::ShlAssign(_) => (Some(BinOp::Shl), true),
        B::ShrAssign(_) => (Some(BinOp::Shr), true),
        _ => (None, false),
    }
}

fn is_variant_name(s: &str) -> bool {
    s.chars().next().is_some_and(char::is_uppercase)
        && !s
            .chars()
            .all(|c| c.is_uppercase() || c == '_' || c.is_ascii_digit())
}

/// An expression in the IR: one function per kind of syntax that needs more than a line.
fn expr(ctx: &mut Ctx, e: &syn::Expr) -> Expr {
    use syn::Expr as E;
    let line = line_of(e);
    match e {
        E::Lit(l) => Expr::Lit(match &l.lit {
            syn::Lit::Int(i) => i.base10_parse::<i64>().map_or(Lit::Other, Lit::Int),
            syn::Lit::Str(s) => Lit::Str(s.value()),
            syn::Lit::Bool(b) => Lit::Bool(b.value),
            _ => Lit::Other,
        }),
        E::Path(p) => {
            let segs = path_segs(&p.path);
            match segs.as_slice() {
                [one] if one == "self" => Expr::This,
                [one] => Expr::Name(one.clone()),
                _ => Expr::Path(segs),
            }
        }
        E::Field(f) => Expr::Field(Box::new(expr(ctx, &f.base)), member(&f.member)),
        E::MethodCall(m) => Expr::Call {
            recv: Some(Box::new(expr(ctx, &m.receiver))),
            name: m.method.to_string(),
            args: m.args.iter().map(|a| expr(ctx, a)).collect(),
            line,
        },
        E::Call(c) => call_expr(ctx, c, line),
        E::Struct(s) => {
            let mut fields: Vec<(String, Expr)> = Vec::new();
            for f in &s.fields {
                fields.push((member(&f.member), expr(ctx, &f.expr)));
            }
            if let Some(r) = &s.rest {
                fields.push(("..".to_string(), expr(ctx, r)));
            }
            Expr::Struct {
                path: path_segs(&s.path),
                fields,
            }
        }
        E::Binary(b) => {
            let l = expr(ctx, &b.left);
            let r = expr(ctx, &b.right);
            match binop(&b.op) {
                (Some(op), false) => Expr::Bin(op, Box::new(l), Box::new(r)),
                (Some(op), true) => Expr::Assign {
                    target: Box::new(l),
                    op: Some(op),
                    value: Box::new(r),
                },
                (None, _) => Expr::Opaque(vec![l, r]),
            }
        }
        E::Assign(a) => Expr::Assign {
            target: Box::new(expr(ctx, &a.left)),
            op: None,
            value: Box::new(expr(ctx, &a.right)),
        },
        E::Unary(u) => {
            let op = match u.op {
                syn::UnOp::Not(_) => UnOp::Not,
                syn::UnOp::Neg(_) => UnOp::Neg,
                _ => UnOp::Other,
            };
            Expr::Unary(op, Box::new(expr(ctx, &u.expr)))
        }
        E::Reference(r) => Expr::Unary(UnOp::Other, Box::new(expr(ctx, &r.expr))),
        E::Paren(p) => expr(ctx, &p.expr),
        E::Group(g) => expr(ctx, &g.expr),
        E::Cast(c) => expr(ctx, &c.expr),
        E::Let(l) => Expr::Let(Box::new(pat(&l.pat)), Box::new(expr(ctx, &l.expr))),
        E::If(_)
        | E::Match(_)
        | E::Block(_)
        | E::Unsafe(_)
        | E::Async(_)
        | E::While(_)
        | E::Loop(_)
        | E::ForLoop(_)
        | E::Return(_)
        | E::Break(_)
        | E::Continue(_) => Expr::Stmt(Box::new(stmt_expr(ctx, e, line))),
        E::Closure(c) => {
            let params = c
                .inputs
                .iter()
                .map(|p| match p {
                    syn::Pat::Ident(i) => i.ident.to_string(),
                    syn::Pat::Type(t) => match &*t.pat {
                        syn::Pat::Ident(i) => i.ident.to_string(),
                        _ => "_".into(),
                    },
                    _ => "_".into(),
                })
                .collect();
            let body = expr_block(ctx, &c.body);
            Expr::Lambda { params, body }
        }
        E::Tuple(t) => Expr::Tuple(t.elems.iter().map(|e| expr(ctx, e)).collect()),
        E::Index(i) => Expr::Index(Box::new(expr(ctx, &i.expr)), Box::new(expr(ctx, &i.index))),
        E::Try(t) => Expr::Try(Box::new(expr(ctx, &t.expr))),
        E::Macro(m) => macro_expr(ctx, &m.mac),
        E::Array(a) => Expr::Opaque(a.elems.iter().map(|e| expr(ctx, e)).collect()),
        E::Repeat(r) => Expr::Opaque(vec![expr(ctx, &r.expr)]),
        E::Range(r) => Expr::Opaque(
            r.start
                .iter()
                .chain(r.end.iter())
                .map(|e| expr(ctx, e))
                .collect(),
        ),
        E::Await(a) => expr(ctx, &a.base),
        _ => Expr::Opaque(vec![]),
    }
}

fn member(m: &syn::Member) -> String {
    match m {
        syn::Member::Named(i) => i.to_string(),
        syn::Member::Unnamed(i) => i.index.to_string(),
    }
}

/// `f(args)`: `Some`/`Ok`/`Err` stay calls, a variant name builds that variant, `a::b::f`
/// is a call on `a::b`, and a call of anything but a path is opaque.
fn call_expr(ctx: &mut Ctx, c: &syn::ExprCall, line: usize) -> Expr {
    let args: Vec<Expr> = c.args.iter().map(|a| expr(ctx, a)).collect();
    let syn::Expr::Path(p) = &*c.func else {
        let mut all = vec![expr(ctx, &c.func)];
        all.extend(args);
        return Expr::Opaque(all);
    };
    let segs = path_segs(&p.path);
    let last = segs.last().cloned().unwrap_or_default();
    if matches!(last.as_str(), "Some" | "Ok" | "Err") {
        return Expr::Call {
            recv: None,
            name: last,
            args,
            line,
        };
    }
    if is_variant_name(&last) {
        return Expr::Struct {
            path: segs,
            fields: args
                .into_iter()
                .enumerate()
                .map(|(i, a)| (i.to_string(), a))
                .collect(),
        };
    }
    if segs.len() == 1 {
        return Expr::Call {
            recv: None,
            name: last,
            args,
            line,
        };
    }
    let owner = segs[..segs.len() - 1].to_vec();
    let recv = if owner.len() == 1 {
        Expr::Name(owner[0].clone())
    } else {
        Expr::Path(owner)
    };
    Expr::Call {
        recv: Some(Box::new(recv)),
        name: last,
        args,
        line,
    }
}

/// A Rust expression that is a statement in the IR (`if`, `match`, blocks, loops, `return`,
/// `break`, `continue`).
fn stmt_expr(ctx: &mut Ctx, e: &syn::Expr, line: usize) -> Stmt {
    use syn::Expr as E;
    let kind = match e {
        E::If(i) => {
            let cond = expr(ctx, &i.cond);
            let then = block(ctx, &i.then_branch);
            // `else if` arrives as a block whose tail is an If statement-expression
            let els = i.else_branch.as_ref().map(|(_, e)| expr_block(ctx, e));
            StmtKind::If { cond, then, els }
        }
        E::Match(m) => {
            let subject = expr(ctx, &m.expr);
            let arms = m
                .arms
                .iter()
                .map(|a| Arm {
                    pats: vec![pat(&a.pat)],
                    guard: a.guard.as_ref().map(|(_, g)| expr(ctx, g)),
                    body: expr_block(ctx, &a.body),
                })
                .collect();
            StmtKind::Match {
                subject,
                arms,
                fallthrough: false,
            }
        }
        E::Block(b) => StmtKind::Block(block(ctx, &b.block)),
        E::Unsafe(b) => StmtKind::Block(block(ctx, &b.block)),
        // An `async` block (spawned, or awaited later) runs its body as if in place: what it
        // reads, updates and sends counts for the handler that created it.
        E::Async(a) => StmtKind::Block(block(ctx, &a.block)),
        E::While(w) => {
            let cond = Some(expr(ctx, &w.cond));
            let body = block(ctx, &w.body);
            StmtKind::Loop {
                label: label(&w.label),
                init: vec![],
                cond,
                update: vec![],
                body,
            }
        }
        E::Loop(l) => StmtKind::Loop {
            label: label(&l.label),
            init: vec![],
            cond: None,
            update: vec![],
            body: block(ctx, &l.body),
        },
        E::ForLoop(f) => {
            let (p, ty) = pat_with_type(ctx, &f.pat);
            let iter = expr(ctx, &f.expr);
            let body = block(ctx, &f.body);
            StmtKind::ForEach {
                label: label(&f.label),
                pat: pat(&p),
                ty,
                iter,
                body,
            }
        }
        E::Return(r) => StmtKind::Return(r.expr.as_ref().map(|e| expr(ctx, e))),
        E::Break(b) => StmtKind::Break(lifetime(&b.label)),
        E::Continue(c) => StmtKind::Continue(lifetime(&c.label)),
        _ => StmtKind::Opaque(vec![]),
    };
    ctx.stmt(line, kind)
}

fn pat(p: &syn::Pat) -> Pat {
    use syn::Pat as P;
    match p {
        P::Ident(i) => {
            let n = i.ident.to_string();
            if let Some((_, sub)) = &i.subpat {
                // `x @ pat`: bind and match; keep the match
                return pat(sub);
            }
            if n == "None" {
                Pat::Const(Expr::Name(n))
            } else if is_variant_name(&n) {
                Pat::Variant {
                    path: vec![n],
                    fields: vec![],
                    rest: true,
                }
            } else {
                Pat::Bind(n)
            }
        }
        P::Wild(_) | P::Rest(_) => Pat::Wild,
        P::Path(pp) => {
            let segs = path_segs(&pp.path);
            if segs.len() == 1 && segs[0] == "None" {
                Pat::Const(Expr::Name(segs[0].clone()))
            } else {
                Pat::Variant {
                    path: segs,
                    fields: vec![],
                    rest: true,
                }
            }
        }
        P::TupleStruct(t) => Pat::Variant {
            path: path_segs(&t.path),
            fields: t
                .elems
                .iter()
                .enumerate()
                .map(|(i, e)| (i.to_string(), pat(e)))
                .collect(),
            rest: false,
        },
        P::Struct(s) => Pat::Variant {
            path: path_segs(&s.path),
            fields: s
                .fields
                .iter()
                .map(|f| {
                    let n = match &f.member {
                        syn::Member::Named(i) => i.to_string(),
                        syn::Member::Unnamed(i) => i.index.to_string(),
                    };
                    (n, pat(&f.pat))
                })
                .collect(),
            rest: s.rest.is_some(),
        },
        P::Tuple(t) => Pat::Tuple(t.elems.iter().map(pat).collect()),
        P::Or(o) => Pat::Or(o.cases.iter().map(pat).collect()),
        P::Lit(l) => Pat::Const(match &l.lit {
            syn::Lit::Int(i) => Expr::Lit(i.base10_parse::<i64>().map_or(Lit::Other, Lit::Int)),
            syn::Lit::Str(s) => Expr::Lit(Lit::Str(s.value())),
            syn::Lit::Bool(b) => Expr::Lit(Lit::Bool(b.value)),
            _ => Expr::Lit(Lit::Other),
        }),
        P::Reference(r) => pat(&r.pat),
        P::Type(t) => pat(&t.pat),
        P::Paren(p) => pat(&p.pat),
        _ => Pat::Opaque,
    }
}
