//! The Java front end: tree-sitter-java's syntax tree lowered to [`crate::ir`].
//!
//! Syntax errors do not stop the analysis: tree-sitter recovers, the erroneous region is dropped
//! and the first error of the file is reported as a gap with its line and column.

use std::collections::BTreeMap;
use std::path::Path;

use tree_sitter::{Node, Parser};

use crate::ir::*;
use crate::Gap;

struct Ctx<'a> {
    src: &'a [u8],
    file: &'a Path,
    next_id: &'a mut usize,
}

impl Ctx<'_> {
    fn text(&self, n: Node) -> String {
        n.utf8_text(self.src).unwrap_or("").to_string()
    }
    fn id(&mut self) -> usize {
        *self.next_id += 1;
        *self.next_id
    }
    fn stmt(&mut self, n: Node, kind: StmtKind) -> Stmt {
        Stmt {
            id: self.id(),
            line: line(n),
            kind,
        }
    }
}

fn line(n: Node) -> usize {
    n.start_position().row + 1
}

fn kids<'t>(n: Node<'t>) -> Vec<Node<'t>> {
    let mut c = n.walk();
    n.named_children(&mut c)
        .filter(|k| !matches!(k.kind(), "line_comment" | "block_comment"))
        .collect()
}

fn field<'t>(n: Node<'t>, name: &str) -> Option<Node<'t>> {
    n.child_by_field_name(name)
}

/// Parse one Java file into `prog`; returns the gaps (syntax errors) found.
pub fn parse_file(
    file: &Path,
    text: &str,
    prog: &mut Program,
    next_id: &mut usize,
) -> Result<Vec<Gap>, String> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_java::LANGUAGE.into())
        .map_err(|e| format!("tree-sitter-java: {e}"))?;
    let tree = parser
        .parse(text, None)
        .ok_or_else(|| format!("{}: the parser gave up", file.display()))?;
    let root = tree.root_node();
    let mut gaps = Vec::new();
    if root.has_error() {
        if let Some(bad) = first_error(root) {
            let p = bad.start_position();
            let what = if bad.is_missing() {
                format!("syntax error: missing `{}`", bad.kind())
            } else {
                let t = bad.utf8_text(text.as_bytes()).unwrap_or("");
                let t: String = t.chars().take(40).collect();
                format!(
                    "syntax error near `{}`; the erroneous region was skipped",
                    t.lines().next().unwrap_or("")
                )
            };
            gaps.push(Gap {
                file: file.to_path_buf(),
                line: p.row + 1,
                column: p.column + 1,
                message: what,
            });
        }
    }
    let mut ctx = Ctx {
        src: text.as_bytes(),
        file,
        next_id,
    };
    for n in kids(root) {
        type_decl(&mut ctx, n, None, prog);
    }
    Ok(gaps)
}

fn first_error(n: Node) -> Option<Node> {
    if n.is_error() || n.is_missing() {
        return Some(n);
    }
    let mut c = n.walk();
    let children: Vec<Node> = n.children(&mut c).collect();
    for k in children {
        if k.has_error() || k.is_missing() {
            if let Some(e) = first_error(k) {
                return Some(e);
            }
        }
    }
    None
}

/// Simple name of a type: `java.util.Map<Long, Vote>[]` -> `Map`.
pub fn simple_type(t: &str) -> String {
    let t = t.split('<').next().unwrap_or(t);
    let t = t.trim().trim_end_matches("[]").trim_end_matches("...");
    let t = t.rsplit('.').next().unwrap_or(t);
    t.trim().to_string()
}

fn modifiers(ctx: &Ctx, n: Node) -> (Vec<Annot>, bool, bool) {
    let mut annots = Vec::new();
    let (mut is_static, mut is_final) = (false, false);
    for k in {
        let mut c = n.walk();
        n.children(&mut c).collect::<Vec<_>>()
    } {
        if k.kind() == "modifiers" {
            let mut c = k.walk();
            for m in k.children(&mut c) {
                match m.kind() {
                    "marker_annotation" | "annotation" => annots.push(annotation(ctx, m)),
                    "static" => is_static = true,
                    "final" => is_final = true,
                    _ => {}
                }
            }
        }
    }
    (annots, is_static, is_final)
}

fn annotation(ctx: &Ctx, n: Node) -> Annot {
    let name = field(n, "name")
        .map(|x| ctx.text(x))
        .unwrap_or_default()
        .rsplit('.')
        .next()
        .unwrap_or("")
        .to_string();
    let mut args = BTreeMap::new();
    if let Some(list) = field(n, "arguments") {
        for a in kids(list) {
            if a.kind() == "element_value_pair" {
                let k = field(a, "key").map(|x| ctx.text(x)).unwrap_or_default();
                let v = field(a, "value")
                    .map(|x| unquote(&ctx.text(x)))
                    .unwrap_or_default();
                args.insert(k, v);
            } else {
                args.insert("value".into(), unquote(&ctx.text(a)));
            }
        }
    }
    Annot { name, args }
}

fn unquote(s: &str) -> String {
    let s = s.trim();
    if s.len() >= 2 && s.starts_with('"') && s.ends_with('"') {
        s[1..s.len() - 1].to_string()
    } else if s.starts_with('{') && s.ends_with('}') {
        // an array of strings: keep them comma-separated
        s[1..s.len() - 1]
            .split(',')
            .map(unquote)
            .collect::<Vec<_>>()
            .join(",")
    } else {
        s.to_string()
    }
}

fn type_decl(ctx: &mut Ctx, n: Node, outer: Option<&str>, prog: &mut Program) {
    let kind = n.kind();
    if !matches!(
        kind,
        "class_declaration" | "interface_declaration" | "enum_declaration" | "record_declaration"
    ) {
        return;
    }
    let name = field(n, "name").map(|x| ctx.text(x)).unwrap_or_default();
    let (annots, _, _) = modifiers(ctx, n);
    let mut class = Class {
        name: name.clone(),
        outer: outer.map(str::to_string),
        file: ctx.file.to_path_buf(),
        line: line(n),
        annots,
        is_enum: kind == "enum_declaration",
        ..Class::default()
    };
    if let Some(s) = field(n, "superclass") {
        for t in kids(s) {
            class.supers.push(simple_type(&ctx.text(t)));
        }
    }
    for k in kids(n) {
        if matches!(k.kind(), "super_interfaces" | "extends_interfaces") {
            for list in kids(k) {
                for t in kids(list) {
                    class.supers.push(simple_type(&ctx.text(t)));
                }
            }
        }
    }
    if kind == "record_declaration" {
        if let Some(ps) = field(n, "parameters") {
            for p in kids(ps) {
                let fname = field(p, "name").map(|x| ctx.text(x)).unwrap_or_default();
                let ty = field(p, "type").map(|x| simple_type(&ctx.text(x)));
                class.fields.insert(
                    fname.clone(),
                    Field {
                        name: fname,
                        ty,
                        is_final: true,
                        line: line(p),
                        ..Field::default()
                    },
                );
            }
        }
    }
    let mut nested = Vec::new();
    if let Some(body) = field(n, "body") {
        let mut members = kids(body);
        if body.kind() == "enum_body" {
            let mut more = Vec::new();
            for m in &members {
                if m.kind() == "enum_constant" {
                    let cname = field(*m, "name").map(|x| ctx.text(x)).unwrap_or_default();
                    class.variants.push(Variant {
                        name: cname,
                        fields: vec![],
                        types: vec![],
                    });
                } else if m.kind() == "enum_body_declarations" {
                    more.extend(kids(*m));
                }
            }
            members = more;
        }
        for m in members {
            match m.kind() {
                "field_declaration" | "constant_declaration" => {
                    let (annots, is_static, is_final) = modifiers(ctx, m);
                    let is_static = is_static || kind == "interface_declaration";
                    let is_final = is_final || kind == "interface_declaration";
                    let ty = field(m, "type").map(|x| simple_type(&ctx.text(x)));
                    let mut c = m.walk();
                    let decls: Vec<Node> = m.children_by_field_name("declarator", &mut c).collect();
                    for d in decls {
                        let fname = field(d, "name").map(|x| ctx.text(x)).unwrap_or_default();
                        let init = field(d, "value").map(|v| expr(ctx, v));
                        class.fields.insert(
                            fname.clone(),
                            Field {
                                name: fname,
                                ty: ty.clone(),
                                is_static,
                                is_final,
                                init,
                                annots: annots.clone(),
                                line: line(d),
                            },
                        );
                    }
                }
                "method_declaration"
                | "constructor_declaration"
                | "compact_constructor_declaration" => {
                    class.methods.push(method(ctx, m, &name));
                }
                "class_declaration"
                | "interface_declaration"
                | "enum_declaration"
                | "record_declaration" => nested.push(m),
                "static_initializer" | "block" => {
                    // Initialisers: kept as a pseudo-method so their calls are visible.
                    let b = kids(m)
                        .into_iter()
                        .find(|k| k.kind() == "block")
                        .unwrap_or(m);
                    class.methods.push(Method {
                        name: "<clinit>".into(),
                        class: name.clone(),
                        body: Some(block(ctx, b)),
                        file: ctx.file.to_path_buf(),
                        line: line(m),
                        is_static: true,
                        ..Method::default()
                    });
                }
                _ => {}
            }
        }
    }
    prog.classes.entry(name.clone()).or_insert(class);
    for m in nested {
        type_decl(ctx, m, Some(&name), prog);
    }
}

fn method(ctx: &mut Ctx, m: Node, class: &str) -> Method {
    let (annots, is_static, _) = modifiers(ctx, m);
    let name = if m.kind() == "method_declaration" {
        field(m, "name").map(|x| ctx.text(x)).unwrap_or_default()
    } else {
        "<init>".to_string()
    };
    let mut params = Vec::new();
    if let Some(ps) = field(m, "parameters") {
        for p in kids(ps) {
            if matches!(p.kind(), "formal_parameter" | "spread_parameter") {
                let pname = field(p, "name")
                    .map(|x| ctx.text(x))
                    .or_else(|| {
                        kids(p)
                            .into_iter()
                            .find(|k| k.kind() == "variable_declarator")
                            .and_then(|d| field(d, "name"))
                            .map(|x| ctx.text(x))
                    })
                    .unwrap_or_default();
                let ty = field(p, "type")
                    .map(|x| simple_type(&ctx.text(x)))
                    .or_else(|| {
                        kids(p)
                            .into_iter()
                            .find(|k| k.kind().ends_with("type") || k.kind() == "type_identifier")
                            .map(|x| simple_type(&ctx.text(x)))
                    });
                params.push(Param {
                    name: pname,
                    ty,
                    varargs: p.kind() == "spread_parameter",
                });
            }
        }
    }
    let ret = field(m, "type").map(|x| simple_type(&ctx.text(x)));
    let body = field(m, "body").map(|b| block(ctx, b));
    Method {
        name,
        class: class.to_string(),
        params,
        ret,
        body,
        annots,
        is_static,
        file: ctx.file.to_path_buf(),
        line: line(m),
    }
}

fn block(ctx: &mut Ctx, n: Node) -> Block {
    let mut stmts = Vec::new();
    if matches!(
        n.kind(),
        "block" | "constructor_body" | "switch_block_statement_group"
    ) {
        for k in kids(n) {
            stmt_into(ctx, k, &mut stmts);
        }
    } else {
        stmt_into(ctx, n, &mut stmts);
    }
    Block::new(stmts)
}

fn comments_mark(ctx: &Ctx, n: Node, mark: &str) -> bool {
    let mut c = n.walk();
    let found = n.children(&mut c).any(|k| {
        matches!(k.kind(), "line_comment" | "block_comment") && ctx.text(k).contains(mark)
    });
    found
}

fn stmt_into(ctx: &mut Ctx, n: Node, out: &mut Vec<Stmt>) {
    match n.kind() {
        "local_variable_declaration" => {
            let (annots, _, _) = modifiers(ctx, n);
            let ty = field(n, "type").map(|x| simple_type(&ctx.text(x)));
            let mut c = n.walk();
            let decls: Vec<Node> = n.children_by_field_name("declarator", &mut c).collect();
            for d in decls {
                let name = field(d, "name").map(|x| ctx.text(x)).unwrap_or_default();
                let init = field(d, "value").map(|v| expr(ctx, v));
                let s = ctx.stmt(
                    d,
                    StmtKind::Local {
                        pat: Pat::Bind(name),
                        ty: ty.clone(),
                        init,
                        annots: annots.clone(),
                        els: None,
                    },
                );
                out.push(s);
            }
        }
        "labeled_statement" => {
            let ks = kids(n);
            let label = ks.first().map(|x| ctx.text(*x));
            let mut inner = Vec::new();
            if let Some(s) = ks.get(1) {
                stmt_into(ctx, *s, &mut inner);
            }
            for mut s in inner {
                match &mut s.kind {
                    StmtKind::Loop { label: l, .. } | StmtKind::ForEach { label: l, .. } => {
                        *l = label.clone()
                    }
                    _ => {}
                }
                out.push(s);
            }
        }
        ";" | "empty_statement" | "local_class_declaration" | "class_declaration" => {}
        _ => {
            let s = stmt(ctx, n);
            out.push(s);
        }
    }
}

fn cond_of(ctx: &mut Ctx, n: Node) -> Expr {
    field(n, "condition")
        .map(|c| expr(ctx, c))
        .unwrap_or(Expr::Lit(Lit::Bool(true)))
}

fn stmt(ctx: &mut Ctx, n: Node) -> Stmt {
    let kind = match n.kind() {
        "block" => StmtKind::Block(block(ctx, n)),
        "expression_statement" => match kids(n).first() {
            Some(e) if e.kind() == "switch_expression" => switch(ctx, *e).kind,
            Some(e) => StmtKind::Expr(expr(ctx, *e)),
            None => StmtKind::Opaque(vec![]),
        },
        "switch_expression" => return switch(ctx, n),
        "if_statement" => {
            let cond = cond_of(ctx, n);
            let then = field(n, "consequence")
                .map(|b| block(ctx, b))
                .unwrap_or_default();
            let els = field(n, "alternative").map(|b| block(ctx, b));
            StmtKind::If { cond, then, els }
        }
        "while_statement" | "do_statement" => {
            let cond = Some(cond_of(ctx, n));
            let body = field(n, "body").map(|b| block(ctx, b)).unwrap_or_default();
            StmtKind::Loop {
                label: None,
                init: vec![],
                cond,
                update: vec![],
                body,
            }
        }
        "for_statement" => for_loop(ctx, n),
        "enhanced_for_statement" => {
            let name = field(n, "name").map(|x| ctx.text(x)).unwrap_or_default();
            let ty = field(n, "type").map(|x| simple_type(&ctx.text(x)));
            let iter = field(n, "value")
                .map(|v| expr(ctx, v))
                .unwrap_or(Expr::Opaque(vec![]));
            let body = field(n, "body").map(|b| block(ctx, b)).unwrap_or_default();
            StmtKind::ForEach {
                label: None,
                pat: Pat::Bind(name),
                ty,
                iter,
                body,
            }
        }
        "return_statement" => StmtKind::Return(kids(n).first().map(|e| expr(ctx, *e))),
        "break_statement" => StmtKind::Break(kids(n).first().map(|e| ctx.text(*e))),
        "continue_statement" => StmtKind::Continue(kids(n).first().map(|e| ctx.text(*e))),
        "throw_statement" => StmtKind::Throw(
            kids(n)
                .first()
                .map(|e| expr(ctx, *e))
                .unwrap_or(Expr::Opaque(vec![])),
        ),
        "yield_statement" => StmtKind::Expr(
            kids(n)
                .first()
                .map(|e| expr(ctx, *e))
                .unwrap_or(Expr::Opaque(vec![])),
        ),
        "try_statement" | "try_with_resources_statement" => try_stmt(ctx, n),
        "synchronized_statement" => {
            let mut b = field(n, "body").map(|b| block(ctx, b)).unwrap_or_default();
            if let Some(lock) = kids(n)
                .into_iter()
                .find(|k| k.kind() == "parenthesized_expression")
            {
                let e = expr(ctx, lock);
                let s = ctx.stmt(lock, StmtKind::Expr(e));
                b.stmts.insert(0, s);
            }
            StmtKind::Block(b)
        }
        "assert_statement" => StmtKind::Opaque(vec![]),
        "explicit_constructor_invocation" => {
            let args = field(n, "arguments")
                .map(|a| kids(a).into_iter().map(|x| expr(ctx, x)).collect())
                .unwrap_or_default();
            StmtKind::Opaque(args)
        }
        _ => StmtKind::Opaque(vec![]),
    };
    ctx.stmt(n, kind)
}

/// `for (init; cond; update) body`.
fn for_loop(ctx: &mut Ctx, n: Node) -> StmtKind {
    let mut init = Vec::new();
    let mut c = n.walk();
    let inits: Vec<Node> = n.children_by_field_name("init", &mut c).collect();
    for i in inits {
        if i.kind() == "local_variable_declaration" {
            stmt_into(ctx, i, &mut init);
        } else {
            let e = expr(ctx, i);
            let s = ctx.stmt(i, StmtKind::Expr(e));
            init.push(s);
        }
    }
    let cond = field(n, "condition").map(|c| expr(ctx, c));
    let mut c = n.walk();
    let ups: Vec<Node> = n.children_by_field_name("update", &mut c).collect();
    let update = ups.into_iter().map(|u| expr(ctx, u)).collect();
    let body = field(n, "body").map(|b| block(ctx, b)).unwrap_or_default();
    StmtKind::Loop {
        label: None,
        init,
        cond,
        update,
        body,
    }
}

/// `try (resources) { body } catch ... finally ...`: the resources are locals declared at
/// the start of the body.
fn try_stmt(ctx: &mut Ctx, n: Node) -> StmtKind {
    let mut pre = Vec::new();
    if let Some(res) = field(n, "resources") {
        for r in kids(res) {
            if r.kind() == "resource" {
                let s = resource(ctx, r);
                let s = ctx.stmt(r, s);
                pre.push(s);
            }
        }
    }
    let mut body = field(n, "body").map(|b| block(ctx, b)).unwrap_or_default();
    if !pre.is_empty() {
        pre.append(&mut body.stmts);
        body.stmts = pre;
    }
    let mut catches = Vec::new();
    let mut finally = None;
    for k in kids(n) {
        match k.kind() {
            "catch_clause" => catches.push(catch_clause(ctx, k)),
            "finally_clause" => {
                finally = kids(k)
                    .into_iter()
                    .find(|b| b.kind() == "block")
                    .map(|b| block(ctx, b));
            }
            _ => {}
        }
    }
    StmtKind::Try {
        body,
        catches,
        finally,
    }
}

/// One resource of a try-with-resources: a local when it is declared, else its expression.
fn resource(ctx: &mut Ctx, r: Node) -> StmtKind {
    let name = field(r, "name").map(|x| ctx.text(x));
    let ty = field(r, "type").map(|x| simple_type(&ctx.text(x)));
    let init = field(r, "value").map(|v| expr(ctx, v));
    match name {
        Some(name) => StmtKind::Local {
            pat: Pat::Bind(name),
            ty,
            init,
            annots: vec![],
            els: None,
        },
        None => StmtKind::Expr(
            kids(r)
                .first()
                .map(|e| expr(ctx, *e))
                .unwrap_or(Expr::Opaque(vec![])),
        ),
    }
}

/// `catch (A | B e) { body }`, with a `@FlyMCCrashHandling` comment in the body as an annotation.
fn catch_clause(ctx: &mut Ctx, k: Node) -> Catch {
    let mut types = Vec::new();
    let mut var = String::new();
    let mut annots = Vec::new();
    for p in kids(k) {
        if p.kind() == "catch_formal_parameter" {
            annots = modifiers(ctx, p).0;
            var = field(p, "name").map(|x| ctx.text(x)).unwrap_or_default();
            for t in kids(p) {
                if t.kind() == "catch_type" {
                    for tt in kids(t) {
                        types.push(simple_type(&ctx.text(tt)));
                    }
                }
            }
        }
    }
    let bnode = field(k, "body");
    if let Some(b) = bnode {
        if comments_mark(ctx, b, "@FlyMCCrashHandling") {
            annots.push(Annot {
                name: "FlyMCCrashHandling".into(),
                args: BTreeMap::new(),
            });
        }
    }
    let body = bnode.map(|b| block(ctx, b)).unwrap_or_default();
    Catch {
        types,
        var,
        body,
        annots,
        line: line(k),
    }
}

fn switch(ctx: &mut Ctx, n: Node) -> Stmt {
    let subject = cond_of(ctx, n);
    let mut arms: Vec<Arm> = Vec::new();
    let mut fallthrough = true;
    if let Some(body) = field(n, "body") {
        for g in kids(body) {
            let mut pats = Vec::new();
            let mut is_default = false;
            let mut stmts = Vec::new();
            let mut tail = None;
            for k in kids(g) {
                if k.kind() == "switch_label" {
                    let ls = kids(k);
                    if ls.is_empty() {
                        is_default = true;
                    }
                    for l in ls {
                        pats.push(Pat::Const(expr(ctx, l)));
                    }
                } else if g.kind() == "switch_rule" {
                    fallthrough = false;
                    match k.kind() {
                        "expression_statement" | "block" | "throw_statement" => {
                            stmt_into(ctx, k, &mut stmts)
                        }
                        _ => tail = Some(Box::new(expr(ctx, k))),
                    }
                } else {
                    stmt_into(ctx, k, &mut stmts);
                }
            }
            if is_default {
                pats.clear();
            }
            arms.push(Arm {
                pats,
                guard: None,
                body: Block { stmts, tail },
            });
        }
    }
    // A `default` that is not last cannot be modelled with ordered arms in general; Java code
    // almost always puts it last. Group empty fall-through labels (`case A: case B: ...`).
    let mut merged: Vec<Arm> = Vec::new();
    let mut pending: Vec<Pat> = Vec::new();
    let mut pending_default = false;
    for a in arms {
        let empty = a.body.stmts.is_empty() && a.body.tail.is_none();
        if fallthrough && empty {
            if a.pats.is_empty() {
                pending_default = true;
            }
            pending.extend(a.pats);
            continue;
        }
        let mut pats = std::mem::take(&mut pending);
        let default = pending_default || a.pats.is_empty();
        pending_default = false;
        pats.extend(a.pats);
        if default {
            pats.clear();
        }
        merged.push(Arm {
            pats,
            guard: None,
            body: a.body,
        });
    }
    ctx.stmt(
        n,
        StmtKind::Match {
            subject,
            arms: merged,
            fallthrough,
        },
    )
}

fn args_of(ctx: &mut Ctx, n: Node) -> Vec<Expr> {
    field(n, "arguments")
        .map(|a| kids(a).into_iter().map(|x| expr(ctx, x)).collect())
        .unwrap_or_default()
}

fn int_lit(t: &str) -> Lit {
    let t = t.replace('_', "");
    let t = t.trim_end_matches(['l', 'L']);
    let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).ok()
    } else if let Some(b) = t.strip_prefix("0b").or_else(|| t.strip_prefix("0B")) {
        i64::from_str_radix(b, 2).ok()
    } else if t.len() > 1 && t.starts_with('0') {
        i64::from_str_radix(&t[1..], 8).ok()
    } else {
        t.parse().ok()
    };
    v.map_or(Lit::Other, Lit::Int)
}

fn binop(op: &str) -> Option<BinOp> {
    Some(match op {
        "+" => BinOp::Add,
        "-" => BinOp::Sub,
        "*" => BinOp::Mul,
        "/" => BinOp::Div,
        "%" => BinOp::Rem,
        "&&" => BinOp::And,
        "||" => BinOp::Or,
        "&" => BinOp::BitAnd,
        "|" => BinOp::BitOr,
        "^" => BinOp::BitXor,
        "<<" => BinOp::Shl,
        ">>" | ">>>" => BinOp::Shr,
        "==" => BinOp::Eq,
        "!=" => BinOp::Ne,
        "<" => BinOp::Lt,
        "<=" => BinOp::Le,
        ">" => BinOp::Gt,
        ">=" => BinOp::Ge,
        _ => return None,
    })
}

/// An expression in the IR: one function per kind of syntax that needs more than a few lines.
fn expr(ctx: &mut Ctx, n: Node) -> Expr {
    match n.kind() {
        "identifier" => Expr::Name(ctx.text(n)),
        "this" => Expr::This,
        // `super.m()` calls the superclass's method, not an override (exec::dispatch)
        "super" => Expr::Name("super".into()),
        "parenthesized_expression" | "cast_expression" => {
            let inner = field(n, "value").or_else(|| kids(n).into_iter().last());
            inner.map(|x| expr(ctx, x)).unwrap_or(Expr::Opaque(vec![]))
        }
        "field_access" => {
            let obj = field(n, "object")
                .map(|o| expr(ctx, o))
                .unwrap_or(Expr::This);
            let f = field(n, "field").map(|x| ctx.text(x)).unwrap_or_default();
            if f == "this" {
                return Expr::This;
            }
            Expr::Field(Box::new(obj), f)
        }
        "scoped_identifier" => {
            let scope = field(n, "scope")
                .map(|o| expr(ctx, o))
                .unwrap_or(Expr::This);
            let f = field(n, "name").map(|x| ctx.text(x)).unwrap_or_default();
            Expr::Field(Box::new(scope), f)
        }
        "method_invocation" => {
            let recv = field(n, "object").map(|o| Box::new(expr(ctx, o)));
            let name = field(n, "name").map(|x| ctx.text(x)).unwrap_or_default();
            let args = args_of(ctx, n);
            Expr::Call {
                recv,
                name,
                args,
                line: line(n),
            }
        }
        "object_creation_expression" => new_expr(ctx, n),
        "array_access" => {
            let a = sub(ctx, n, "array");
            let i = sub(ctx, n, "index");
            Expr::Index(Box::new(a), Box::new(i))
        }
        "assignment_expression" => assign_expr(ctx, n),
        "update_expression" => {
            let t = ctx.text(n);
            let target = kids(n)
                .first()
                .map(|x| expr(ctx, *x))
                .unwrap_or(Expr::Opaque(vec![]));
            Expr::IncDec {
                target: Box::new(target),
                inc: t.contains("++"),
            }
        }
        "binary_expression" => {
            let a = sub(ctx, n, "left");
            let b = sub(ctx, n, "right");
            let op = field(n, "operator")
                .map(|x| ctx.text(x))
                .unwrap_or_default();
            match binop(&op) {
                Some(op) => Expr::Bin(op, Box::new(a), Box::new(b)),
                None => Expr::Opaque(vec![a, b]),
            }
        }
        "unary_expression" => {
            let a = sub(ctx, n, "operand");
            let op = match field(n, "operator").map(|x| ctx.text(x)).as_deref() {
                Some("!") => UnOp::Not,
                Some("-") => UnOp::Neg,
                _ => UnOp::Other,
            };
            Expr::Unary(op, Box::new(a))
        }
        "ternary_expression" => {
            let c = field(n, "condition").map(|x| expr(ctx, x));
            let a = field(n, "consequence").map(|x| expr(ctx, x));
            let b = field(n, "alternative").map(|x| expr(ctx, x));
            let o = || Expr::Opaque(vec![]);
            Expr::Cond(
                Box::new(c.unwrap_or_else(o)),
                Box::new(a.unwrap_or_else(o)),
                Box::new(b.unwrap_or_else(o)),
                line(n),
            )
        }
        "instanceof_expression" => {
            let a = sub(ctx, n, "left");
            let t = field(n, "right")
                .map(|x| simple_type(&ctx.text(x)))
                .unwrap_or_default();
            Expr::InstanceOf(Box::new(a), t)
        }
        "lambda_expression" => lambda_expr(ctx, n),
        "switch_expression" => Expr::Stmt(Box::new(switch(ctx, n))),
        "decimal_integer_literal"
        | "hex_integer_literal"
        | "octal_integer_literal"
        | "binary_integer_literal" => Expr::Lit(int_lit(&ctx.text(n))),
        "string_literal" => {
            let t = ctx.text(n);
            let inner = t.trim_matches('"').to_string();
            Expr::Lit(Lit::Str(inner))
        }
        "true" => Expr::Lit(Lit::Bool(true)),
        "false" => Expr::Lit(Lit::Bool(false)),
        "null_literal" => Expr::Lit(Lit::Null),
        "character_literal"
        | "decimal_floating_point_literal"
        | "hex_floating_point_literal"
        | "class_literal" => Expr::Lit(Lit::Other),
        "type_identifier" => Expr::Name(ctx.text(n)),
        _ => {
            // array creation/initialisers, method references, ...: keep the sub-expressions.
            let subs = kids(n).into_iter().map(|k| expr(ctx, k)).collect();
            Expr::Opaque(subs)
        }
    }
}

/// The expression in field `name` of `n`; an opaque one when it has none.
fn sub(ctx: &mut Ctx, n: Node, name: &str) -> Expr {
    field(n, name)
        .map(|x| expr(ctx, x))
        .unwrap_or(Expr::Opaque(vec![]))
}

/// `new T(args)`. Anonymous class bodies: their methods become lambdas passed along, so
/// their effects are counted where the object is created.
fn new_expr(ctx: &mut Ctx, n: Node) -> Expr {
    let ty = field(n, "type")
        .map(|x| simple_type(&ctx.text(x)))
        .unwrap_or_default();
    let mut args = args_of(ctx, n);
    for k in kids(n) {
        if k.kind() == "class_body" {
            for m in kids(k) {
                if m.kind() == "method_declaration" {
                    let me = method(ctx, m, &ty);
                    args.push(Expr::Lambda {
                        params: me.params.iter().map(|p| p.name.clone()).collect(),
                        body: me.body.unwrap_or_default(),
                    });
                }
            }
        }
    }
    Expr::New {
        ty,
        args,
        line: line(n),
    }
}

/// `a = b`, `a op= b`.
fn assign_expr(ctx: &mut Ctx, n: Node) -> Expr {
    let target = sub(ctx, n, "left");
    let value = sub(ctx, n, "right");
    let op = field(n, "operator")
        .map(|x| ctx.text(x))
        .unwrap_or_default();
    let op = if op == "=" {
        None
    } else {
        binop(op.trim_end_matches('='))
    };
    Expr::Assign {
        target: Box::new(target),
        op,
        value: Box::new(value),
    }
}

/// `(a, b) -> body`; an expression body is a `return` of it.
fn lambda_expr(ctx: &mut Ctx, n: Node) -> Expr {
    let params = field(n, "parameters")
        .map(|p| {
            if p.kind() == "identifier" {
                vec![ctx.text(p)]
            } else {
                kids(p)
                    .into_iter()
                    .map(|k| {
                        field(k, "name")
                            .map(|x| ctx.text(x))
                            .unwrap_or_else(|| ctx.text(k))
                    })
                    .collect()
            }
        })
        .unwrap_or_default();
    let body = match field(n, "body") {
        Some(b) if b.kind() == "block" => block(ctx, b),
        Some(e) => {
            let e = expr(ctx, e);
            let s = ctx.stmt(n, StmtKind::Return(Some(e)));
            Block::new(vec![s])
        }
        None => Block::default(),
    };
    Expr::Lambda { params, body }
}
