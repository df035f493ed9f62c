// Not Rust that compiles: a declaration for flymc's analyzer only (integrations/raftrs/ANALYSIS.md).
//
// raft-rs 0.7's `Raft<T>` keeps its term, vote, leader, role and log in a `RaftCore<T>` field
// `r` and reaches them through `impl Deref<Target = RaftCore<T>> for Raft<T>` (`self.term` in
// every `impl Raft` method). The analyzer's Rust front end takes a trait impl's trait as a
// supertype but does not follow `Deref` to its target, and its `wrappers` cover only generic
// wrappers (`Valid<T>`), so without this line `self.term` in `Raft::step` resolves to no field.
// Read by `flymc analyze` next to the crate's sources, it makes `RaftCore` a supertype of `Raft`:
// fields and methods not found on `Raft` are looked up on `RaftCore`, as `Deref` does.
impl<T: Storage> RaftCore<T> for Raft<T> {}
