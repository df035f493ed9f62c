//! A library-shaped Raft core like openraft's: the node state sits behind a `Valid<T>` wrapper,
//! the vote is one struct holding the term, the vote and the leader and is compared as a
//! whole, and the messages nest the fields the hook reports (`req.leader_commit.index`).
//! Its handlers queue commands that a `Core` runs after them (`[[queue]]`). Annotated by
//! `annotations.toml` only (wrappers and queues have no in-source form).

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
    pub output: Output,
}

pub enum Command {
    SaveVote { vote: Vote },
    Respond { resp: VoteResponse },
    Apply { upto: u64 },
}

pub struct Output {
    cmds: Vec<Command>,
}

impl Output {
    pub fn push_command(&mut self, c: Command) {
        self.cmds.push(c);
    }
}

pub struct Disk;

impl Disk {
    pub fn save_vote(&self, _v: &Vote) {}
}

/// Runs the engine's commands after every handler.
pub struct Core {
    pub engine: Engine,
    pub disk: Disk,
    pub net: Net,
    pub applied: u64,
}

impl Core {
    pub fn run_command(&mut self, cmd: Command) {
        match cmd {
            Command::SaveVote { vote } => self.disk.save_vote(&vote),
            Command::Respond { resp } => self.net.reply(resp),
            Command::Apply { upto } => {
                if upto > self.applied {
                    self.applied = upto;
                }
            }
        }
    }
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

pub struct CommitRequest {
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
        self.output.push_command(Command::SaveVote { vote: req.vote });
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

    /// Queues its effects: the commit is applied and the reply sent by the commands.
    pub fn handle_commit(&mut self, req: CommitRequest) {
        if req.leader_commit.index > self.state.committed {
            self.state.committed = req.leader_commit.index;
            self.output.push_command(Command::Apply {
                upto: req.leader_commit.index,
            });
        }
        self.output.push_command(Command::Respond {
            resp: VoteResponse {
                vote: *self.state.vote_ref(),
                granted: true,
            },
        });
    }
}
