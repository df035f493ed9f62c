// A Rust node annotated in doc comments (Rust has no inert custom attributes).

pub struct Outbox;
impl Outbox {
    pub fn send(&mut self, _to: usize, _m: Msg) {}
}

pub struct Node {
    /// @FlyMCNodeState(persistent = true)
    pub ballot: u64,
    /// @FlyMCNodeState
    pub accepted: Option<u64>,
    /// @FlyMCNodeState
    pub acks: u64,
}

/// @FlyMCMessage
#[derive(Clone, Debug)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Msg {
    Prepare { ballot: u64 },
    Promise { ballot: u64, accepted: Option<u64> },
    Tick,
}

pub struct Paxos;

impl Paxos {
    /// @FlyMCHandler
    pub fn handle(&self, n: &mut Node, from: usize, msg: Msg, out: &mut Outbox) {
        match msg {
            Msg::Prepare { ballot } => {
                if ballot > n.ballot {
                    n.ballot = ballot;
                    out.send(from, Msg::Promise { ballot: n.ballot, accepted: n.accepted });
                }
            }
            Msg::Promise { ballot, .. } => {
                if ballot == n.ballot {
                    n.acks += 1;
                }
            }
            Msg::Tick => {}
        }
    }
}
