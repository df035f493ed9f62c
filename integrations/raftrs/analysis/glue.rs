// Not compiled: read by `flymc analyze` only, next to raft-rs 0.7's sources and the node program
// (integrations/raftrs/node/src/main.rs). See integrations/raftrs/ANALYSIS.md.
//
// The node program handles its timers in one `match` over `(d.kind, d.name.as_str())` in
// `Node::handle`, whose discriminators (`flymc_hook::Kind`, a `&str`) the analysis cannot
// decide, and drives raft-rs through `RawNode::campaign`, which steps a local `MsgHup` message
// the analysis cannot follow into the right arm of `Raft::step`. So each timer's arm is
// restated here as a method of its own (the handlers `[[handler]] kind = "elect"` and
// `"heartbeat"` in raft-rs.toml), copied from `Node::handle`, with `self.raw.campaign()`
// written as the call it ends in (`Raft::step` of `MsgHup` calls `Raft::hup(false)`), and
// followed by what `Node::run` does after every event: `drain` (modelled in the side file)
// and `after` (main.rs, analysed as written).
impl Node {
    /// `(Kind::Timeout, "elect")`, then `drain` and `after`.
    async fn flymc_elect(&mut self) -> Result<(), HookError> {
        self.elect = None;
        if self.eligible && self.elections_left > 0 && self.needs_election() {
            self.elections_left -= 1;
            self.raw.raft.hup(false);
        }
        self.drain().await?;
        self.after().await
    }

    /// `(Kind::Timeout, "heartbeat")`, then `drain` and `after`.
    async fn flymc_heartbeat(&mut self) -> Result<(), HookError> {
        self.beat = None;
        if self.heartbeats_left > 0 && self.role() == StateRole::Leader {
            self.heartbeats_left -= 1;
            self.raw.ping();
        }
        self.drain().await?;
        self.after().await
    }
}
