//! The Rust hook crate: a Rust node links it to hand every inter-node message and timer to flymc's
//! event server and deliver it only when told.
//!
//! Empty until the event server and hook protocol land (issue 4); nothing here pretends to work.
