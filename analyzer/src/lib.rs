//! The static analyzer (FlyMC §4.1): from annotated Java and Rust sources to the guarded
//! read/update/send/disk sets that the `flymc` strategy's event independence consumes.
//!
//! Empty until the analyzer issue lands; nothing here pretends to work.
