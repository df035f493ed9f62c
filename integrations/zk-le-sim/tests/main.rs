//! This crate's tests as one binary, a module per area.

mod common;

mod scenarios;
mod sets;
