//! flymc's property language. It began as the guard language of sets files: a small expression
//! language over the receiving node's state
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
//!
//! The same language states [`Condition`]s over a whole global state (a workload's
//! `[faults] when`). There is no message and no receiving node; instead
//! ```text
//! atom += "n" INT "." IDENT ("." IDENT)*       node INT's variable: n2.state
//!       | ("any" | "all") "(" or ")"           over every node, `n.` naming each in turn
//!       | "count" "(" or ")"                   how many nodes satisfy it
//!       | "unique" "(" or "per" or ("where" or)? ")"
//!                                              no two nodes (where the last `or` holds) with
//!                                              equal keys hold different values (null values
//!                                              and keys ignored)
//!       | "take" "(" or "," or ")"             the first K elements of a list (null reads [])
//! ```
//! e.g. `n2.state == "FOLLOWING"` or `all(!n.alive || n.zabState == "BROADCAST")`. `alive` is
//! whether the node is up and `id` its number (0-based; `n2.id` is 2): both are reserved, not
//! the system's variables. A node that is down has no other variables (they read `null`: what
//! it last reported is not its state now). A node for which the body of `any`/`all` cannot be
//! evaluated does not satisfy it.
//!
//! A workload's `[[property]]` is a condition parsed by [`Condition::parse_property`], which
//! also has history built-ins ([`history`]), judged over the run so far and allowed only
//! outside `any`/`all`/`count`/`unique` (combined with `&&`, `||`, `!`):
//! ```text
//! atom += "ever_unique" "(" or "per" or ("where" or)? ")"
//!                                     as unique, over every live node of every state so far
//!       | "ever_agree" "(" or ")"     every list a live node had so far agrees with every
//!                                     other on their common prefix
//!       | "kept" "(" or "at" or "in" or ("where" or)? ")"
//!                                     kept(L at E in LOG where C): every list L a live node
//!                                     had so far, at its E then, is a prefix of LOG at every
//!                                     live node where C holds whose E is at least that one
//! ```
//! They need memory: [`Condition::check`] takes the property's [`Memory`]. A property may
//! instead name an external checker ([`Check::Command`]).
//!
//! Limits (the text comes from files flymc may be handed): parentheses and calls' arguments
//! nest at most [`MAX_NESTING`] (64) deep, a syntax error at the column that opens one more;
//! chains of `||`, `&&`, `+`/`-` may be any length and runs of `!`/`-` any count, and are
//! parsed and judged without recursing once per term.
//!
//! The crate knows no global state type: conditions read a run's nodes through [`Node`], which
//! the model's node view implements. By phase: [`lex`](crate::lex) (text to tokens),
//! [`parse`](crate::parse) (tokens to an [`Expr`]), [`eval`](crate::eval) (an expression's
//! value), [`condition`] and [`history`] (verdicts on states and on the run so far),
//! [`check`] (a property's check: a condition or an external checker).

mod ast;
pub mod check;
pub mod condition;
mod eval;
pub mod history;
mod lex;
mod parse;
#[cfg(test)]
mod tests;

use serde_json::{Map, Value};

pub use ast::{Expr, Op, Quant, Scope};
pub use check::Check;
pub use condition::Condition;
pub use eval::EvalError;
pub use history::{History, Memory};
pub use parse::{parse, parse_summary, ParseError, MAX_NESTING};

/// One node of a global state as conditions read it: whether it is up, and its variables.
pub trait Node {
    fn alive(&self) -> bool;
    fn vars(&self) -> &Map<String, Value>;
}
