//! Hardening (issue 22): path files and workloads are bounded and checked; a replay compares something.
