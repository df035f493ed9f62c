//! flymc
