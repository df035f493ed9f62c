//! Symbolic values over the receiving node's state at the start of a handler (`n.x`) and the
//! message's fields (`m.f`), and the branch conditions ("atoms") that become guards.

use std::collections::BTreeSet;
use std::fmt;

use serde_json::Value;

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SOp {
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

impl SOp {
    fn text(&self) -> &'static str {
        match self {
            SOp::Or => "||",
            SOp::And => "&&",
            SOp::Eq => "==",
            SOp::Ne => "!=",
            SOp::Lt => "<",
            SOp::Le => "<=",
            SOp::Gt => ">",
            SOp::Ge => ">=",
            SOp::Add => "+",
            SOp::Sub => "-",
        }
    }
}

/// A value expressible in the guard language.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Sym {
    Int(i64),
    Str(String),
    Bool(bool),
    Null,
    /// A named constant (`Leader.PROPOSAL`, `ServerState.LOOKING`): its value, and its name for
    /// naming message kinds.
    Const {
        name: String,
        value: Box<Sym>,
    },
    N(String),
    M(String),
    Not(Box<Sym>),
    Neg(Box<Sym>),
    Len(Box<Sym>),
    Bin(Box<Sym>, SOp, Box<Sym>),
}

impl Sym {
    pub fn bin(a: Sym, op: SOp, b: Sym) -> Sym {
        Sym::Bin(Box::new(a), op, Box::new(b))
    }

    /// The literal value, looking through named constants.
    pub fn lit(&self) -> Option<Value> {
        match self {
            Sym::Int(i) => Some((*i).into()),
            Sym::Str(s) => Some(Value::String(s.clone())),
            Sym::Bool(b) => Some((*b).into()),
            Sym::Null => Some(Value::Null),
            Sym::Const { value, .. } => value.lit(),
            _ => None,
        }
    }

    pub fn is_lit(&self) -> bool {
        self.lit().is_some()
    }

    /// Fold constant sub-expressions; `None` for a constant condition that is neither true nor
    /// false is never produced: the caller sees `Sym::Bool` for decided conditions.
    pub fn simplify(self) -> Sym {
        match self {
            Sym::Not(a) => match a.simplify() {
                Sym::Bool(b) => Sym::Bool(!b),
                Sym::Not(x) => *x,
                x => Sym::Not(Box::new(x)),
            },
            Sym::Bin(a, op, b) => {
                let a = a.simplify();
                let b = b.simplify();
                match op {
                    SOp::And => match (&a, &b) {
                        (Sym::Bool(false), _) | (_, Sym::Bool(false)) => Sym::Bool(false),
                        (Sym::Bool(true), _) => b,
                        (_, Sym::Bool(true)) => a,
                        _ => Sym::bin(a, op, b),
                    },
                    SOp::Or => match (&a, &b) {
                        (Sym::Bool(true), _) | (_, Sym::Bool(true)) => Sym::Bool(true),
                        (Sym::Bool(false), _) => b,
                        (_, Sym::Bool(false)) => a,
                        _ => Sym::bin(a, op, b),
                    },
                    SOp::Eq | SOp::Ne => match (a.lit(), b.lit()) {
                        (Some(x), Some(y)) => Sym::Bool((x == y) == (op == SOp::Eq)),
                        _ if a == b => Sym::Bool(op == SOp::Eq),
                        _ => Sym::bin(a, op, b),
                    },
                    SOp::Lt | SOp::Le | SOp::Gt | SOp::Ge => {
                        match (
                            a.lit().and_then(|v| v.as_i64()),
                            b.lit().and_then(|v| v.as_i64()),
                        ) {
                            (Some(x), Some(y)) => Sym::Bool(match op {
                                SOp::Lt => x < y,
                                SOp::Le => x <= y,
                                SOp::Gt => x > y,
                                _ => x >= y,
                            }),
                            _ => Sym::bin(a, op, b),
                        }
                    }
                    SOp::Add | SOp::Sub => {
                        match (
                            a.lit().and_then(|v| v.as_i64()),
                            b.lit().and_then(|v| v.as_i64()),
                        ) {
                            (Some(x), Some(y)) => {
                                let r = if op == SOp::Add {
                                    x.checked_add(y)
                                } else {
                                    x.checked_sub(y)
                                };
                                r.map_or_else(
                                    || Sym::bin(a.clone(), op.clone(), b.clone()),
                                    Sym::Int,
                                )
                            }
                            _ => Sym::bin(a, op, b),
                        }
                    }
                }
            }
            other => other,
        }
    }

    /// Does this read the message (`m.`)?
    pub fn msg_fields(&self, out: &mut BTreeSet<String>) {
        match self {
            Sym::M(f) => {
                out.insert(f.clone());
            }
            Sym::Not(a) | Sym::Neg(a) | Sym::Len(a) => a.msg_fields(out),
            Sym::Bin(a, _, b) => {
                a.msg_fields(out);
                b.msg_fields(out);
            }
            _ => {}
        }
    }

    pub fn node_vars(&self, out: &mut BTreeSet<String>) {
        match self {
            Sym::N(f) => {
                out.insert(f.clone());
            }
            Sym::Not(a) | Sym::Neg(a) | Sym::Len(a) => a.node_vars(out),
            Sym::Bin(a, _, b) => {
                a.node_vars(out);
                b.node_vars(out);
            }
            _ => {}
        }
    }

    /// Rename the message fields (used to strip a discriminator) -- not needed by callers yet.
    pub fn mentions_msg_field(&self, f: &str) -> bool {
        let mut s = BTreeSet::new();
        self.msg_fields(&mut s);
        s.contains(f)
    }
}

fn quote(s: &str) -> String {
    // The guard language's strings have no escapes; drop characters it cannot carry.
    let clean: String = s.chars().filter(|c| *c != '"' && *c != '\\').collect();
    format!("\"{clean}\"")
}

impl fmt::Display for Sym {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Sym::Int(i) if *i < 0 => write!(f, "-{}", i.unsigned_abs()),
            Sym::Int(i) => write!(f, "{i}"),
            Sym::Str(s) => write!(f, "{}", quote(s)),
            Sym::Bool(b) => write!(f, "{b}"),
            Sym::Null => write!(f, "null"),
            Sym::Const { value, .. } => write!(f, "{value}"),
            Sym::N(v) => write!(f, "n.{v}"),
            Sym::M(v) => write!(f, "m.{v}"),
            Sym::Not(a) => match **a {
                Sym::Bin(..) => write!(f, "!({a})"),
                _ => write!(f, "!{a}"),
            },
            Sym::Neg(a) => write!(f, "-({a})"),
            Sym::Len(a) => write!(f, "len({a})"),
            Sym::Bin(a, op, b) => {
                let wrap = |x: &Sym, f: &mut fmt::Formatter<'_>| -> fmt::Result {
                    match x {
                        Sym::Bin(_, o, _) if prec(o) <= prec(op) => write!(f, "({x})"),
                        _ => write!(f, "{x}"),
                    }
                };
                wrap(a, f)?;
                write!(f, " {} ", op.text())?;
                // right operand: parenthesise equal precedence too (left-assoc sums)
                match &**b {
                    Sym::Bin(_, o, _) if prec(o) <= prec(op) => write!(f, "({b})"),
                    _ => write!(f, "{b}"),
                }
            }
        }
    }
}

fn prec(op: &SOp) -> u8 {
    match op {
        SOp::Or => 1,
        SOp::And => 2,
        SOp::Eq | SOp::Ne | SOp::Lt | SOp::Le | SOp::Gt | SOp::Ge => 3,
        SOp::Add | SOp::Sub => 4,
    }
}

/// A branch condition taken with a polarity, in a canonical form so that `a < b` taken true and
/// `b > a` taken false are recognised as the same test.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Atom {
    pub test: Sym,
    pub holds: bool,
}

impl Atom {
    /// Canonicalise: comparisons become `>` or `==` (operands of `==` ordered), `!` is folded
    /// into the polarity.
    pub fn new(test: Sym, holds: bool) -> Atom {
        match test {
            Sym::Not(a) => Atom::new(*a, !holds),
            Sym::Bin(a, op, b) => match op {
                SOp::Ne => Atom::new(Sym::Bin(a, SOp::Eq, b), !holds),
                SOp::Lt => Atom::new(Sym::Bin(b, SOp::Gt, a), holds),
                SOp::Le => Atom::new(Sym::Bin(a, SOp::Gt, b), !holds),
                SOp::Ge => Atom::new(Sym::Bin(b, SOp::Gt, a), !holds),
                SOp::Eq => {
                    // literal on the right, otherwise a stable order
                    if (a.is_lit() && !b.is_lit()) || (!b.is_lit() && a.to_string() > b.to_string())
                    {
                        Atom {
                            test: Sym::Bin(b, SOp::Eq, a),
                            holds,
                        }
                    } else {
                        Atom {
                            test: Sym::Bin(a, SOp::Eq, b),
                            holds,
                        }
                    }
                }
                _ => Atom {
                    test: Sym::Bin(a, op, b),
                    holds,
                },
            },
            t => Atom { test: t, holds },
        }
    }

    /// The guard text of this atom.
    pub fn guard(&self) -> String {
        if self.holds {
            self.test.to_string()
        } else {
            match &self.test {
                Sym::Bin(a, SOp::Eq, b) => Sym::Bin(a.clone(), SOp::Ne, b.clone()).to_string(),
                Sym::Bin(a, SOp::Gt, b) => Sym::Bin(a.clone(), SOp::Le, b.clone()).to_string(),
                t => Sym::Not(Box::new(t.clone())).to_string(),
            }
        }
    }

    /// `x == c` for a literal `c`: (x, c).
    pub fn equality(&self) -> Option<(&Sym, Value)> {
        match &self.test {
            Sym::Bin(a, SOp::Eq, b) => b.lit().map(|v| (&**a, v)),
            _ => None,
        }
    }

    /// Can this atom and `other` never hold together?
    pub fn contradicts(&self, other: &Atom) -> bool {
        if self.test == other.test {
            return self.holds != other.holds;
        }
        // a > b and b > a; a > b and a == b
        if let (Sym::Bin(a, SOp::Gt, b), true) = (&self.test, self.holds) {
            if other.holds {
                if let Sym::Bin(c, op, d) = &other.test {
                    if *op == SOp::Gt && a == d && b == c {
                        return true;
                    }
                    if *op == SOp::Eq && ((a == c && b == d) || (a == d && b == c)) {
                        return true;
                    }
                }
            }
        }
        if other.holds && self.holds {
            if let (Sym::Bin(_, SOp::Eq, _), Sym::Bin(_, SOp::Gt, _)) = (&self.test, &other.test) {
                return other.contradicts(self);
            }
        }
        if let (Some((x, c)), Some((y, d))) = (self.equality(), other.equality()) {
            if x == y && c != d {
                // x == c and x == d with c != d
                return self.holds && other.holds;
            }
        }
        false
    }
}

/// Do two sets of atoms contradict each other (some pair can never hold together)?
pub fn inconsistent(a: &[Atom], b: &[Atom]) -> bool {
    a.iter().any(|x| b.iter().any(|y| x.contradicts(y))) || not_ordered(a, b)
}

/// `x <= y && y <= x && x != y`: comparisons are over a total order (integers), so the three
/// cannot hold together, though no two of them contradict. Only looked for when `b` brings one
/// of the three, so a state's atoms are not searched again on every new atom.
fn not_ordered(a: &[Atom], b: &[Atom]) -> bool {
    let negated = |t: &Atom| !t.holds && matches!(&t.test, Sym::Bin(_, SOp::Gt | SOp::Eq, _));
    if !b.iter().any(negated) {
        return false;
    }
    let all: Vec<&Atom> = a.iter().chain(b).filter(|t| negated(t)).collect();
    all.iter().any(|x| {
        let Sym::Bin(p, SOp::Gt, q) = &x.test else {
            return false;
        };
        let mirrored = all
            .iter()
            .any(|y| matches!(&y.test, Sym::Bin(c, SOp::Gt, d) if c == q && d == p));
        mirrored
            && all.iter().any(|y| {
                matches!(&y.test, Sym::Bin(c, SOp::Eq, d)
                    if (c == p && d == q) || (c == q && d == p))
            })
    })
}

/// The guard text of a conjunction.
pub fn guard_text(atoms: &[Atom]) -> String {
    if atoms.is_empty() {
        return "true".into();
    }
    atoms
        .iter()
        .map(|a| {
            let g = a.guard();
            if matches!(&a.test, Sym::Bin(_, SOp::Or, _)) && a.holds {
                format!("({g})")
            } else {
                g
            }
        })
        .collect::<Vec<_>>()
        .join(" && ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmp(a: &str, op: SOp, b: &str) -> Sym {
        Sym::bin(Sym::N(a.into()), op, Sym::M(b.into()))
    }

    #[test]
    fn le_both_ways_and_unequal_is_inconsistent() {
        let le = Atom::new(cmp("term", SOp::Le, "term"), true);
        let ge = Atom::new(cmp("term", SOp::Ge, "term"), true);
        let ne = Atom::new(cmp("term", SOp::Ne, "term"), true);
        assert!(!inconsistent(
            std::slice::from_ref(&le),
            std::slice::from_ref(&ge)
        ));
        assert!(!inconsistent(
            std::slice::from_ref(&le),
            std::slice::from_ref(&ne)
        ));
        assert!(inconsistent(
            &[le.clone(), ge.clone()],
            std::slice::from_ref(&ne)
        ));
        assert!(inconsistent(&[le, ne], &[ge]));
        // on other operands it is not
        let other = Atom::new(cmp("term", SOp::Ne, "last_index"), true);
        let le = Atom::new(cmp("term", SOp::Le, "term"), true);
        let ge = Atom::new(cmp("term", SOp::Ge, "term"), true);
        assert!(!inconsistent(&[le, ge], &[other]));
    }
}
