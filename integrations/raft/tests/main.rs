//! This crate's tests as one binary, a module per area.

mod agreement;
mod params;
