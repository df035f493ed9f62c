//! Which methods of the analysed sources a call may run: Java's overload resolution by arity
//! and parameter types (boxing and varargs included, inherited and default methods seen), then
//! every override below the receiver's static type (a call on a base type runs whichever
//! subclass the object is: all of them are candidates, which is sound).

use std::collections::{BTreeSet, VecDeque};

use super::{Exec, Val};
use crate::ir::{Method, Param};
use crate::sym::Sym;

/// More candidates than this for one call are cut (and the call named in a gap).
pub(super) const MAX_TARGETS: usize = 4;

/// How a method takes a call's arguments: Java prefers a fixed-arity method to a varargs one,
/// then the one matching more argument types exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Fit {
    varargs: bool,
    /// Arguments whose type is not known to match exactly (fewer is better).
    inexact: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Compat {
    Exact,
    Maybe,
    No,
}

/// The boxed name of a primitive, so `long` and `Long` are one type.
fn boxed(t: &str) -> &str {
    match t {
        "long" => "Long",
        "int" => "Integer",
        "short" => "Short",
        "byte" => "Byte",
        "char" => "Character",
        "boolean" => "Boolean",
        "double" => "Double",
        "float" => "Float",
        t => t,
    }
}

/// Primitives, their boxes and strings: never a collection or a class of the sources.
fn is_value_type(t: &str) -> bool {
    matches!(
        boxed(t),
        "Long"
            | "Integer"
            | "Short"
            | "Byte"
            | "Character"
            | "Boolean"
            | "Double"
            | "Float"
            | "String"
    )
}

/// Numeric widening order (`int` passes as `long`).
fn numeric_rank(t: &str) -> Option<u8> {
    match boxed(t) {
        "Byte" => Some(1),
        "Short" | "Character" => Some(2),
        "Integer" => Some(3),
        "Long" => Some(4),
        "Float" => Some(5),
        "Double" => Some(6),
        _ => None,
    }
}

/// A parameter type that takes any reference (`Object`, a type variable `T`).
fn takes_anything(t: &str) -> bool {
    matches!(
        t,
        "Object" | "Number" | "Comparable" | "Serializable" | "CharSequence"
    ) || (t.len() <= 2
        && t.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()))
}

/// The static type of an argument: its declared type, or a literal's.
pub(super) fn arg_type(v: &Val) -> Option<String> {
    if let Some(t) = &v.ty {
        return Some(t.clone());
    }
    match v.sym.as_ref().map(|s| match s {
        Sym::Const { value, .. } => &**value,
        s => s,
    }) {
        Some(Sym::Int(_)) => Some("int".into()),
        Some(Sym::Str(_)) => Some("String".into()),
        Some(Sym::Bool(_)) => Some("boolean".into()),
        _ => None,
    }
}

impl<'a> Exec<'a> {
    /// Is `sup` `c` or one of its (transitive) supertypes?
    pub(super) fn is_subtype(&self, c: &str, sup: &str) -> bool {
        let mut seen = BTreeSet::new();
        let mut todo = vec![c.to_string()];
        while let Some(x) = todo.pop() {
            if x == sup {
                return true;
            }
            if !seen.insert(x.clone()) {
                continue;
            }
            if let Some(cl) = self.prog.classes.get(&x) {
                todo.extend(cl.supers.iter().cloned());
            }
        }
        false
    }

    /// Every class below `c`, nearest first (an abstract base's subclasses before theirs).
    pub(super) fn descendants(&self, c: &str) -> Vec<&'a str> {
        let mut out: Vec<&'a str> = Vec::new();
        let mut seen = BTreeSet::new();
        let mut todo: VecDeque<&str> = VecDeque::from([c]);
        while let Some(x) = todo.pop_front() {
            for s in self.subs.get(x).into_iter().flatten() {
                if seen.insert(s.as_str()) {
                    let s: &'a str = self.prog.classes.get_key_value(s).map_or("", |(k, _)| k);
                    if !s.is_empty() {
                        out.push(s);
                        todo.push_back(s);
                    }
                }
            }
        }
        out
    }

    fn compat(&self, arg: Option<&str>, param: Option<&str>) -> Compat {
        let (Some(a), Some(p)) = (arg, param) else {
            return Compat::Maybe;
        };
        if boxed(a) == boxed(p) || self.is_subtype(a, p) {
            return Compat::Exact;
        }
        if takes_anything(p) {
            return Compat::Maybe;
        }
        if let (Some(x), Some(y)) = (numeric_rank(a), numeric_rank(p)) {
            return if x < y { Compat::Maybe } else { Compat::No };
        }
        let known = |t: &str| self.prog.classes.contains_key(t);
        if is_value_type(a) != is_value_type(p) || (known(a) && known(p) && !self.is_subtype(p, a))
        {
            return Compat::No;
        }
        Compat::Maybe
    }

    /// How `m` takes arguments of these types, if it can.
    fn fit(&self, m: &Method, args: &[Option<String>]) -> Option<Fit> {
        let n = m.params.len();
        let var = m.params.last().filter(|p| p.varargs);
        let fixed = n == args.len();
        let spread = var.is_some() && args.len() + 1 >= n;
        if !fixed && !spread {
            return None;
        }
        let score = |params: &mut dyn Iterator<Item = &Param>| -> Option<usize> {
            let mut inexact = 0;
            for (p, a) in params.zip(args) {
                match self.compat(a.as_deref(), p.ty.as_deref()) {
                    Compat::Exact => {}
                    Compat::Maybe => inexact += 1,
                    Compat::No => return None,
                }
            }
            Some(inexact)
        };
        // fixed arity first (an array passed to `T...`), then spread over the varargs
        if fixed {
            if let Some(inexact) = score(&mut m.params.iter()) {
                return Some(Fit {
                    varargs: false,
                    inexact,
                });
            }
        }
        let var = var?;
        if !spread {
            return None;
        }
        let mut ps = m.params[..n - 1]
            .iter()
            .chain(std::iter::repeat(var))
            .take(args.len());
        score(&mut ps).map(|inexact| Fit {
            varargs: true,
            inexact,
        })
    }

    /// The methods named `name` that a call with these arguments on static type `class` may
    /// select, looking through supertypes (inherited and interface default methods): the best
    /// fits, several when the argument types cannot tell them apart (sound). A method
    /// redeclared lower in the hierarchy hides the one above. When no method takes the
    /// argument types (the walk's types can be wrong), any of the right arity may run.
    pub(super) fn lookup(&self, class: &str, name: &str, args: &[Val]) -> Vec<&'a Method> {
        let types: Vec<Option<String>> = args.iter().map(arg_type).collect();
        let found = self.lookup_typed(class, name, &types);
        if !found.is_empty() || types.iter().all(Option::is_none) {
            return found;
        }
        self.lookup_typed(class, name, &vec![None; types.len()])
    }

    fn lookup_typed(&self, class: &str, name: &str, types: &[Option<String>]) -> Vec<&'a Method> {
        let mut seen = BTreeSet::new();
        let mut todo = VecDeque::from([class.to_string()]);
        let mut cands: Vec<(Fit, &'a Method)> = Vec::new();
        while let Some(c) = todo.pop_front() {
            if !seen.insert(c.clone()) {
                continue;
            }
            let Some(cl) = self.prog.classes.get(&c) else {
                continue;
            };
            // an implementation before a bodiless declaration of the same class
            let mut ms: Vec<&'a Method> = cl.methods.iter().filter(|m| m.name == name).collect();
            ms.sort_by_key(|m| m.body.is_none());
            for m in ms {
                let Some(f) = self.fit(m, types) else {
                    continue;
                };
                // hidden by a redeclaration lower down
                if !cands.iter().any(|(_, x)| same_signature(x, m)) {
                    cands.push((f, m));
                }
            }
            todo.extend(cl.supers.iter().cloned());
        }
        choose(cands)
    }

    /// The methods a call of `decl`'s signature on static type `class` may run: `decl` itself
    /// when it has a body, and every override in a class below `class`, nearest first.
    pub(super) fn overrides(&self, class: &str, decl: &'a Method) -> Vec<&'a Method> {
        let mut out: Vec<&'a Method> = Vec::new();
        if decl.body.is_some() {
            out.push(decl);
        }
        for s in self.descendants(class) {
            let Some(cl) = self.prog.classes.get(s) else {
                continue;
            };
            for m in &cl.methods {
                if m.body.is_some()
                    && same_signature(m, decl)
                    && !out.iter().any(|x| std::ptr::eq(*x, m))
                {
                    out.push(m);
                }
            }
        }
        out
    }
}

/// Java's choice among the candidates, over-approximated where argument types are unknown:
/// fixed-arity methods whose every parameter takes its argument's known type exclude the
/// varargs ones and the doubtful ones; otherwise a method that takes the known types in
/// the next phase likewise; otherwise any candidate may be the one (all of them, sound).
fn choose(cands: Vec<(Fit, &Method)>) -> Vec<&Method> {
    for varargs in [false, true] {
        if cands
            .iter()
            .any(|(f, _)| f.varargs == varargs && f.inexact == 0)
        {
            return cands
                .into_iter()
                .filter(|(f, _)| f.varargs == varargs && f.inexact == 0)
                .map(|(_, m)| m)
                .collect();
        }
        if cands.iter().any(|(f, _)| f.varargs == varargs) {
            // doubtful fixed-arity candidates: a varargs one may still be the choice
            break;
        }
    }
    cands.into_iter().map(|(_, m)| m).collect()
}

/// Same name and erased parameter types (what an override must have).
fn same_signature(a: &Method, b: &Method) -> bool {
    a.name == b.name
        && a.params.len() == b.params.len()
        && a.params.iter().zip(&b.params).all(|(x, y)| {
            x.varargs == y.varargs
                && match (&x.ty, &y.ty) {
                    (Some(s), Some(t)) => {
                        boxed(s) == boxed(t) || takes_anything(s) || takes_anything(t)
                    }
                    _ => true,
                }
        })
}
