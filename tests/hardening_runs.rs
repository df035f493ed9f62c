//! Hardening (issue 22): whatever ends a run keeps its work; run directories are private and swept; signals exit as users expect.
