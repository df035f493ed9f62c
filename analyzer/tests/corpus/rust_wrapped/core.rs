//! A library-shaped Raft core like openraft's: the node state sits behind a `Valid<T>` wrapper,
//! the vote is one struct holding the term, the vote and the leader and is compared as a
//! whole, and the messages nest the fields the hook reports (`req.leader_commit.index`).
//! Annotated by `annotations.toml` only (wrappers have no in-source form).

use std::ops::Deref;

pub struct Valid<T> {
    inner: T,
}

impl<T> Deref for Valid<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

#[derive(Clone, Copy, PartialEq, PartialOrd)]
pub struct LeaderId {
    pub term: u64,
    pub node_id: u64,
}

#[derive(Clone, Copy, PartialEq, PartialOrd)]
pub struct Vote {
    pub leader_id: LeaderId,
    pub committed: bool,
}

#[derive(Clone, Copy)]
pub struct LogId {
    pub term: u64,
    pub index: u64,
}

pub struct State {
    pub vote: Vote,
    pub committed: u64,
    pub last_index: u64,
}

impl State {
    pub fn vote_ref(&self) -> &Vote {
        &self.vote
    }
}

pub struct Engine {
    pub state: Valid<State>,
}

pub struct VoteRequest {
    pub vote: Vote,
    pub last_log_id: LogId,
}

pub struct VoteResponse {
    pub vote: Vote,
    pub granted: bool,
}

pub struct AppendRequest {
    pub vote: Vote,
    pub leader_commit: LogId,
}

pub struct Net;

impl Net {
    pub fn reply(&self, _r: VoteResponse) {}
}

impl Engine {
    pub fn handle_vote(&mut self, req: VoteRequest, net: &Net) {
        // A whole `Vote` comparison: no guard, but the vote is read.
        if req.vote < *self.state.vote_ref() {
            net.reply(VoteResponse {
                vote: *self.state.vote_ref(),
                granted: false,
            });
            return;
        }
        // A nested message field the hook reports flat, against a wrapped field.
        if req.last_log_id.index < self.state.last_index {
            net.reply(VoteResponse {
                vote: req.vote,
                granted: false,
            });
            return;
        }
        self.state.vote = req.vote;
        net.reply(VoteResponse {
            vote: req.vote,
            granted: true,
        });
    }

    pub fn handle_append(&mut self, req: AppendRequest) {
        if req.leader_commit.index > self.state.committed {
            self.state.committed = req.leader_commit.index;
        }
    }
}
