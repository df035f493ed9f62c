//! `raft-sim`: a deterministic in-memory simulation of Raft (leader election and log
//! replication) on three nodes, a benchmark fixture for flymc's strategies (FlyMC, Figure 1:
//! Raft-1..3) and the home of one real bug.
//!
//! # State
//! Persistent across crash and reboot: `current_term`, `voted_for`, `log` (entries
//! `{term, value}`, `value = null` for a leader's no-op), `incarnation` (boot count). Volatile
//! (reset by a crash): `role` (follower, pre_candidate, candidate, leader), `leader` (the leader
//! this node knows), `commit_index`, `applied` (the state machine: the entries applied so far),
//! candidate bookkeeping `votes`, `refused`, `non_rival`, `outranked`, `deferring_to`, leader
//! bookkeeping `next_index` and `inflight`, and what the node noticed of its peers' crashes: `down`, `seen`,
//! `fallen`. Per-peer maps (`next_index`, `seen`, `fallen`) are serialised as multisets of
//! peer ids (peer `p` appears `map[p]` times) so symmetry reduction, which renames ids inside
//! id arrays, renames them soundly.
//!
//! # Events
//! Messages `pre_vote`, `pre_vote_response`, `request_vote`, `request_vote_response`,
//! `append_entries`, `append_entries_response`; timers `election_timeout {crashed,
//! crashed_term, crashed_incarnation}` and `heartbeat {peer, incarnation}`; client requests
//! `update {value}`. There is no free-running timer: every run ends by quiescence.
//!
//! ## Replication
//! Raft's basic scheme with one request in flight per peer (raft-rs's probe state, async-raft's
//! replication stream): a leader sends a peer everything from its `next_index` on when a client
//! update arrives and no request with entries to that peer awaits its reply (`inflight`);
//! otherwise the new entries go out when that reply arrives. It advances `next_index` only on
//! success and steps it back to the rejected `prev_log_index` on a mismatch (resending only
//! when it moved). With three nodes an entry of the current term is committed as soon as one
//! peer has it. Round 2 (the commit index) goes out when a success reply shows a caught-up peer
//! behind the leader's commit index. A follower answers every append_entries that carries
//! entries or fails; a successful empty one (a pure commit notice) gets no reply. A new leader
//! appends a no-op and sends it at once, then sets every `next_index` past it (Raft's
//! optimistic initial value). One request in flight keeps followers from seeing requests out
//! of order, which keeps `raft-1..3` small enough to explore.
//!
//! ## Elections
//! Election timers are armed only (1) at start for the nodes in `election_timers`, (2) at every
//! other node when a node crashes (the crash notice), (3) by the rules below. Because the
//! checker delivers messages in any order, a timer can fire at the worst moment; these rules
//! keep every run finite and end it with a leader every live node knows (the tests check it
//! exhaustively for elections from one timer, a crash of any one node, and a follower's crash
//! and reboot; by random runs for split votes and up to two crashes and reboots of any nodes;
//! the workload's `max_events` stays the executor's hard stop):
//! * Pre-vote (Raft thesis §9.6): a timer never bumps the term; the node first asks for
//!   pre-votes and only runs once a peer would vote for it. A peer refuses if it knows a live
//!   leader other than the asker (leader stickiness, §4.2.3), has granted its vote in its term
//!   to another candidate it has not noticed crash (`deferring_to`), is a candidate still
//!   waiting for answers (unless the asker's log is strictly more up to date), or has a more up
//!   to date log. Real request_votes are refused the same way by a node that knows a leader.
//! * A timer does nothing at a leader, at a node that knows a live leader or defers to a
//!   candidate, or at a candidate still waiting for answers.
//! * Split votes: a candidate's election has failed once every peer it has not noticed down
//!   refused it. If every refusal came from a rival (a node that voted for itself in that
//!   term), exactly one candidate retries, at once and without pre-vote: the one whose log
//!   outranks all rivals' (more up to date; the lower id on a tie), so it can win their votes.
//!   Any other failed candidate retries with a pre-vote.
//! * Hand-off: a node that refuses a (pre-)vote because its own log is more up to date, while
//!   nobody leads its term, runs itself.
//! * A leader that sees a newer term in an append_entries reply steps down and arms its timer
//!   (which does nothing if that term got a leader it has heard from).
//! * Crash and reboot notices: a crash arms `election_timeout {crashed}` at the other nodes; a
//!   reboot arms `heartbeat {peer}` at them. They may be noticed in either order (incarnations
//!   sort them out). A noticed crash clears the node's leader and deferral if they were the
//!   crashed incarnation's, and makes the node ignore requests the dead incarnation sent as
//!   leader or candidate that arrive late (`fallen`). On a reboot notice a leader forgets the
//!   request in flight to the rebooted node (it was lost) and sends it append_entries from its
//!   `next_index`, and a (pre-)candidate waiting for its answer asks it again.
//!
//! No deterministic symmetric rule can end split votes against an adversarial scheduler (it
//! mirrors two candidates forever), hence the tie-break by id, and nodes are only declared
//! symmetric in workloads without elections.
//!
//! # Bug switch
//! `[params] variant = "bug-apply-before-match"` models async-raft 0.6.1 (fixed in openraft
//! 0.6.3): a follower handling append_entries sets `commit_index = min(leader_commit, its own
//! last log index)` and applies up to it *before* checking that its log matches the leader's at
//! `prev_log_index`/`prev_log_term`, so it applies its own divergent entries. Workload
//! `raft-bug`: n0 leads term 1, appends client value 1 at index 1 and crashes before it reaches
//! anyone; n1 wins term 2 with n2's vote, appends a no-op at index 1 and commits it with n2; n0
//! reboots; n1's append_entries to n0 (prev_log_index 1, prev_log_term 2, leader_commit 1)
//! makes n0 apply its own value 1 at index 1: `state-machine-safety` fails.

mod config;
mod properties;
mod protocol;

#[cfg(test)]
mod tests;

use std::sync::LazyLock;

use flymc_model::sim::SimTarget;
use flymc_model::{About, Property, Symmetry, System, Target, TargetError, Workload};

pub use config::{Config, Variant};
pub use protocol::{Entry, Msg, Raft, RaftNode, Role, NODES};

/// State variables that hold node ids (an id, `null`, or an array of ids).
pub const NODE_REF_VARS: &[&str] = &[
    "voted_for",
    "leader",
    "votes",
    "next_index",
    "inflight",
    "refused",
    "down",
    "seen",
    "fallen",
    "deferring_to",
];
/// Message fields that hold node ids.
pub const NODE_REF_FIELDS: &[&str] = &["crashed", "peer"];

/// The `raft-sim` system.
pub struct RaftSimSystem;

impl System for RaftSimSystem {
    fn about(&self) -> &About {
        static ABOUT: LazyLock<About> = LazyLock::new(|| {
            About::new(
                "raft-sim",
                "Raft election + log replication on 3 simulated nodes; bug: async-raft 0.6.1 applies before the log match check",
            )
            .sets(include_str!("../sets.json"))
            .message_kinds(&MESSAGE_KINDS)
            // Raft's properties, shared with the real systems, and their view here.
            .sources(&[
                "integrations/raft/properties/src/lib.rs",
                "integrations/raft-sim/src/properties.rs",
            ])
        });
        &ABOUT
    }

    fn target(&self, workload: &Workload) -> Result<Box<dyn Target>, TargetError> {
        let config = Config::parse(workload)?;
        Ok(Box::new(SimTarget::new(Raft { config })))
    }

    fn properties(&self, _workload: &Workload) -> Vec<Box<dyn Property>> {
        properties::all()
    }

    /// All three nodes are interchangeable in workloads without elections (no crashes, no
    /// reboots, no initial election timers): the update path never looks at id values, and
    /// the initial leader is told apart by its state. With elections the split-vote rule
    /// breaks ties by id, so no nodes are declared symmetric.
    fn symmetry(&self, workload: &Workload) -> Symmetry {
        let elections = match Config::parse(workload) {
            Ok(c) => !c.election_timers.is_empty(),
            Err(_) => true,
        };
        if elections || workload.crashes > 0 || workload.reboots > 0 {
            Symmetry::none()
        } else {
            Symmetry::all(NODES).with_refs(NODE_REF_VARS, NODE_REF_FIELDS)
        }
    }
}

/// Every event name a node can receive: messages, the two timers and the client update.
pub const MESSAGE_KINDS: [&str; 9] = [
    "pre_vote",
    "pre_vote_response",
    "request_vote",
    "request_vote_response",
    "append_entries",
    "append_entries_response",
    "election_timeout",
    "heartbeat",
    "update",
];
