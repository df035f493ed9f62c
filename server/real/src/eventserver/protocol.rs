//! The hook protocol's wire types. They are defined once, in the `flymc-hook` crate, so the
//! server and the Rust hook cannot drift apart; `hooks/PROTOCOL.md` describes them for hooks in
//! other languages.

pub use flymc_hook::protocol::*;
