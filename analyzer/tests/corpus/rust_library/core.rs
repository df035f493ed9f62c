// A library-style Rust node (like async-raft): the node state lives in a core struct whose
// fields are named and shaped differently from what the node reports, the request handler is
// async and its return value is the reply, a state transition runs without a message, and
// requests go out from an async block.

pub struct Net;

impl Net {
    pub async fn send(&self, _to: u64, _m: VoteRequest) {}
}

pub enum State {
    Follower,
    Candidate,
}

pub enum Update {
    ThisNode,
    Unknown,
}

pub struct Core {
    /// @FlyMCNodeState(name = "term", persistent = true)
    current_term: u64,
    /// @FlyMCNodeState(persistent = true)
    voted_for: Option<u64>,
    /// The node reports its log's entries, not this index: no guard may compare it.
    /// @FlyMCNodeState(name = "log", persistent = true, guards = false)
    last_log_index: u64,
    /// @FlyMCNodeState(name = "role", guards = false)
    target_state: State,
    /// @FlyMCNodeState(name = "leader")
    current_leader: Option<u64>,
    id: u64,
    net: Net,
}

/// The hook reports `term` and `last_index` (this `last_log_index`), not `candidate_id`.
/// @FlyMCMessage(kind = "vote", report = "term last_log_index:last_index")
pub struct VoteRequest {
    term: u64,
    candidate_id: u64,
    last_log_index: u64,
}

pub struct VoteResponse {
    term: u64,
    vote_granted: bool,
}

impl Core {
    /// @FlyMCHandler(reply = true)
    pub async fn handle_vote_request(&mut self, msg: VoteRequest) -> Result<VoteResponse, ()> {
        if msg.term < self.current_term {
            return Ok(VoteResponse {
                term: self.current_term,
                vote_granted: false,
            });
        }
        if msg.term > self.current_term {
            self.current_term = msg.term;
            self.voted_for = None;
            self.target_state = State::Follower;
        }
        if msg.candidate_id == 0 {
            return Err(());
        }
        if msg.last_log_index < self.last_log_index {
            return Ok(VoteResponse {
                term: self.current_term,
                vote_granted: false,
            });
        }
        match self.voted_for {
            Some(_) => Ok(VoteResponse {
                term: self.current_term,
                vote_granted: false,
            }),
            None => {
                self.voted_for = Some(msg.candidate_id);
                self.save().await?;
                Ok(VoteResponse {
                    term: self.current_term,
                    vote_granted: true,
                })
            }
        }
    }

    async fn save(&self) -> Result<(), ()> {
        Ok(())
    }

    fn update_leader(&mut self, u: Update) {
        match u {
            Update::ThisNode => self.current_leader = Some(self.id),
            Update::Unknown => self.current_leader = None,
        }
    }

    /// The election timeout: no message, a kind of its own.
    /// @FlyMCHandler(kind = "elect")
    pub async fn campaign(&mut self) {
        self.current_term += 1;
        self.voted_for = Some(self.id);
        self.target_state = State::Candidate;
        self.update_leader(Update::Unknown);
        let req = VoteRequest {
            term: self.current_term,
            candidate_id: self.id,
            last_log_index: self.last_log_index,
        };
        let net = &self.net;
        let task = async move { net.send(0, req).await };
        task.await;
    }
}
