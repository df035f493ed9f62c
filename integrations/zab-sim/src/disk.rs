//! What one node has on disk, and how 3.8.0 reads it back.
//!
//! Every change here is one crash-point event of the real integration (hooks.toml's `disk`
//! points), except the truncation a TRUNC asks for, which 3.8.0 does inside the TRUNC step
//! (`ZKDatabase.truncateLog`) and the real hook does not stop at either.

use serde::Serialize;

use crate::state::Zxid;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Disk {
    /// The `currentEpoch` file (`QuorumPeer.writeLongToFile`).
    #[serde(rename = "currentEpoch")]
    pub current_epoch: u64,
    /// The `acceptedEpoch` file.
    #[serde(rename = "acceptedEpoch")]
    pub accepted_epoch: u64,
    /// The newest snapshot, as the zxids of its data tree (`FileSnap.serialize`). A first
    /// start writes an empty one (`FileTxnSnapLog.restore` with `autoCreateDB`), so there
    /// always is one.
    pub snapshot: Vec<Zxid>,
    /// The transactions `FileTxnLog.commit` flushed, in order.
    pub txnlog: Vec<Zxid>,
}

impl Disk {
    pub fn new(epoch: u64) -> Disk {
        Disk {
            current_epoch: epoch,
            accepted_epoch: epoch,
            snapshot: Vec::new(),
            txnlog: Vec::new(),
        }
    }

    /// The zxid the snapshot was taken at.
    pub fn snapshot_zxid(&self) -> Zxid {
        self.snapshot.last().copied().unwrap_or(0)
    }

    /// `FileTxnSnapLog.restore`: the snapshot's tree, then the logged transactions past it
    /// (`fastForwardFromEdits`). Returns the tree and the replayed transactions, which
    /// `ZKDatabase.loadDataBase`'s playback listener adds to the committed log.
    pub fn restore(&self) -> (Vec<Zxid>, Vec<Zxid>) {
        let mut tree = self.snapshot.clone();
        let from = self.snapshot_zxid();
        let replayed: Vec<Zxid> = self.txnlog.iter().copied().filter(|&z| z > from).collect();
        tree.extend(&replayed);
        (tree, replayed)
    }

    /// `FileTxnLog.truncate`: drop the logged transactions after `zxid`.
    pub fn truncate(&mut self, zxid: Zxid) {
        self.txnlog.retain(|&z| z <= zxid);
    }
}
