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

#[cfg(test)]
mod tests {
    use super::*;

    fn val(sym: Option<Sym>, taint: &[Src]) -> Val {
        Val {
            sym,
            taint: taint.iter().cloned().collect(),
            ..Val::opaque()
        }
    }

    #[test]
    fn join_keeps_what_both_agree_on_and_all_taint() {
        let a = val(Some(Sym::N("term".into())), &[Src::N("term".into())]);
        let b = val(Some(Sym::N("term".into())), &[Src::M("term".into())]);
        let j = a.join(&b);
        assert_eq!(j.sym, Some(Sym::N("term".into())));
        assert_eq!(j.taint.len(), 2);
        // The join is an upper bound of both, whichever side it starts from.
        assert_eq!(j, b.join(&a));
        assert!(a.taint.is_subset(&j.taint) && b.taint.is_subset(&j.taint));
    }

    #[test]
    fn join_of_different_values_forgets_the_value() {
        let j = Val::sym(Sym::Int(1)).join(&Val::sym(Sym::Int(2)));
        assert_eq!(j.sym, None);
        let msg = Val {
            obj: Obj::Msg,
            ..Val::opaque()
        };
        assert_eq!(msg.join(&Val::opaque()).obj, Obj::Plain);
        assert_eq!(msg.join(&msg).obj, Obj::Msg);
    }

    #[test]
    fn tuples_join_element_wise_and_carry_their_elements_taint() {
        let t = |s: i64, src: &str| Val {
            obj: Obj::Tuple(vec![
                Val::sym(Sym::Int(s)),
                Val::tainted([Src::S(src.into())].into()),
            ]),
            ..Val::opaque()
        };
        let j = t(1, "a").join(&t(1, "b"));
        let Obj::Tuple(vs) = &j.obj else {
            panic!("{j:?}")
        };
        assert_eq!(vs[0].sym, Some(Sym::Int(1)));
        assert_eq!(vs[1].taint, [Src::S("a".into()), Src::S("b".into())].into());
        assert_eq!(j.all_taint().len(), 2);
    }
}
