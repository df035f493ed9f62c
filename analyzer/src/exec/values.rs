//! The value lattice: what the walk knows of a value (a symbolic term over the pre-state and
//! the message, the node variables and message fields it derives from, the object it is).

use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeSet;
use std::hash::Hash;

use crate::sym::Sym;

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Src {
    N(String),
    M(String),
    /// A string constant (file names for the disk set).
    S(String),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Obj {
    Plain,
    /// The message being handled.
    Msg,
    /// A node variable's object (or part of it): mutating it updates the variable.
    Node(String),
    /// A class used as a value (`Leader.PROPOSAL`'s `Leader`).
    Class(String),
    Tuple(Vec<Val>),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Val {
    pub sym: Option<Sym>,
    pub taint: BTreeSet<Src>,
    pub obj: Obj,
    /// Static type (simple name) when known.
    pub ty: Option<String>,
}

impl Val {
    pub fn opaque() -> Val {
        Val {
            sym: None,
            taint: BTreeSet::new(),
            obj: Obj::Plain,
            ty: None,
        }
    }
    pub(super) fn sym(s: Sym) -> Val {
        Val {
            sym: Some(s),
            ..Val::opaque()
        }
    }
    pub(super) fn tainted(taint: BTreeSet<Src>) -> Val {
        Val {
            taint,
            ..Val::opaque()
        }
    }
    pub fn all_taint(&self) -> BTreeSet<Src> {
        let mut t = self.taint.clone();
        if let Obj::Tuple(vs) = &self.obj {
            for v in vs {
                t.extend(v.all_taint());
            }
        }
        t
    }
    pub(super) fn join(&self, o: &Val) -> Val {
        Val {
            sym: if self.sym == o.sym {
                self.sym.clone()
            } else {
                None
            },
            taint: self.taint.union(&o.taint).cloned().collect(),
            obj: if self.obj == o.obj {
                self.obj.clone()
            } else {
                match (&self.obj, &o.obj) {
                    (Obj::Tuple(a), Obj::Tuple(b)) if a.len() == b.len() => {
                        Obj::Tuple(a.iter().zip(b).map(|(x, y)| x.join(y)).collect())
                    }
                    _ => Obj::Plain,
                }
            },
            ty: if self.ty == o.ty {
                self.ty.clone()
            } else {
                None
            },
        }
    }
    pub(super) fn shape(&self, h: &mut DefaultHasher) {
        self.sym.hash(h);
        match &self.obj {
            Obj::Tuple(vs) => {
                for v in vs {
                    v.shape(h);
                }
            }
            o => o.hash(h),
        }
        self.ty.hash(h);
    }
}
