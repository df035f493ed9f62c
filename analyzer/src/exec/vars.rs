//! Node variables: which fields and locals are node state, and reading and writing them.

use std::collections::BTreeSet;

use super::library::PRIMITIVES;
use super::{Exec, Obj, Src, St, Val};
use crate::ir::*;
use crate::sym::Sym;

impl<'a> Exec<'a> {
    pub(super) fn node_local(&self, st: &St, name: &str) -> Option<String> {
        let f = st.frames.last()?;
        self.local_vars
            .get(&(f.class.clone(), f.method.clone(), name.to_string()))
            .cloned()
    }

    pub(super) fn field_var(&self, class: &str, field: &str) -> Option<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![class.to_string()];
        while let Some(c) = todo.pop() {
            if !seen.insert(c.clone()) {
                continue;
            }
            if let Some(v) = self.field_vars.get(&(c.clone(), field.to_string())) {
                return Some(v.clone());
            }
            if let Some(cl) = self.prog.classes.get(&c) {
                if cl.fields.contains_key(field) {
                    return None;
                }
                todo.extend(cl.supers.iter().cloned());
            }
        }
        None
    }

    /// Which class declares `field`, searching `class`, its supers, then (for bare names) its
    /// outer classes.
    pub(super) fn field_owner(&self, class: &str, field: &str, outer: bool) -> Option<&'a Class> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![class.to_string()];
        while let Some(c) = todo.pop() {
            if !seen.insert(c.clone()) {
                continue;
            }
            if let Some(cl) = self.prog.classes.get(&c) {
                if cl.fields.contains_key(field) {
                    return Some(cl);
                }
                todo.extend(cl.supers.iter().cloned());
            }
        }
        if outer {
            let o = self.prog.classes.get(class)?.outer.clone()?;
            return self.field_owner(&o, field, true);
        }
        None
    }

    pub(super) fn var_type(&self, var: &str) -> Option<String> {
        for ((c, f), v) in &self.spec.fields {
            if v.name == var {
                return self
                    .prog
                    .classes
                    .get(c)
                    .and_then(|cl| cl.fields.get(f))
                    .and_then(|f| f.ty.clone());
            }
        }
        None
    }

    pub(super) fn read_var(&self, st: &mut St, var: &str) -> Val {
        self.mark(st, "read", var);
        let ty = self.var_type(var);
        let primitive = ty.as_deref().is_some_and(|t| PRIMITIVES.contains(&t));
        // A variable whose reported value is not this value gets no symbol: no guard on it.
        let guards = !self.unguarded.contains(var);
        let mut v = st.node.get(var).cloned().unwrap_or_else(|| Val {
            sym: guards.then(|| Sym::N(var.to_string())),
            taint: BTreeSet::new(),
            obj: Obj::Node(var.to_string()),
            ty: ty.clone(),
        });
        v.taint.insert(Src::N(var.to_string()));
        if primitive && ty.as_deref() != Some("Option") {
            v.obj = Obj::Plain;
        } else {
            v.obj = Obj::Node(var.to_string());
        }
        if v.ty.is_none() {
            v.ty = ty;
        }
        v
    }

    pub(super) fn write_var(&self, st: &mut St, var: &str, v: Val, increment: bool) {
        self.mark(st, "update", var);
        if !increment {
            st.sets.non_incr.insert(var.to_string());
        }
        let mut v = v;
        v.obj = Obj::Node(var.to_string());
        st.node.insert(var.to_string(), v);
    }

    /// A mutation of part of a variable's object (`n.log.push(e)`, `map.put(k, v)`).
    pub(super) fn touch_var(&self, st: &mut St, var: &str, taint: &BTreeSet<Src>) {
        self.mark(st, "update", var);
        st.sets.non_incr.insert(var.to_string());
        let mut cur = st.node.get(var).cloned().unwrap_or_else(|| Val {
            sym: None,
            taint: BTreeSet::new(),
            obj: Obj::Node(var.to_string()),
            ty: self.var_type(var),
        });
        cur.sym = None;
        cur.taint.extend(taint.iter().cloned());
        st.node.insert(var.to_string(), cur);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{java, start, NODE};
    use super::*;

    #[test]
    fn annotated_fields_are_node_variables_read_and_written_through_the_state() {
        let (prog, spec) = java(NODE);
        let ex = Exec::new(&prog, &spec);
        assert_eq!(ex.field_var("Node", "term").as_deref(), Some("term"));
        assert_eq!(ex.field_var("Msg", "term"), None);
        let (_, mut st) = start(&ex, "onMsg");
        assert_eq!(
            ex.read_var(&mut st, "term").sym,
            Some(Sym::N("term".into()))
        );
        ex.write_var(&mut st, "term", Val::sym(Sym::Int(7)), false);
        assert_eq!(ex.read_var(&mut st, "term").sym, Some(Sym::Int(7)));
        assert_eq!(st.sets.read, ["term".to_string()].into());
        assert_eq!(st.sets.update, ["term".to_string()].into());
    }
}
