//! Hardening (issue 22): hostile connections against the event server cannot end or change a run.
