//! A random walk (the paper's "Rand" and DPOR's occasional random paths).

use flymc_model::EventKind;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::Order;
use crate::run::Enabled;

/// A uniformly random enabled event, crashes and reboots included, from a seed. Sleep sets are
/// not consulted: they are worked out for default-order branches, never handed to random walks.
#[derive(Debug)]
pub struct RandomOrder {
    rng: ChaCha8Rng,
    faults: bool,
}

impl RandomOrder {
    pub fn new(seed: u64) -> Self {
        RandomOrder {
            rng: ChaCha8Rng::seed_from_u64(seed),
            faults: true,
        }
    }

    /// A random walk of the system alone, biased as MaceMC's liveness walks are (§4.3): never
    /// a crash or reboot (the environment's choices; a walk that crashed a quorum would make
    /// most liveness properties hold vacuously), and events in the default order's classes
    /// (a message, else a client request, else a crash-point write, else a timer), uniformly
    /// at random within the first class that has one, messages on one channel in the order
    /// they were sent: a prompt FIFO network (TCP) whose timers fire when it is quiet. Unbiased
    /// walks, which fire a timer while messages wait as often as they deliver one, escape
    /// ZOOKEEPER-1419's livelock from any state (its finalize wait fires between two votes
    /// that would have voided it); no real network is that slow.
    pub fn walk(seed: u64) -> Self {
        RandomOrder {
            faults: false,
            ..RandomOrder::new(seed)
        }
    }
}

impl Order for RandomOrder {
    fn pick(&mut self, enabled: &[Enabled], _asleep: &dyn Fn(&Enabled) -> bool) -> Option<usize> {
        if self.faults {
            return (!enabled.is_empty()).then(|| self.rng.gen_range(0..enabled.len()));
        }
        let class = |e: &Enabled| match e.event.kind {
            EventKind::Message => 0,
            EventKind::Client => 1,
            EventKind::Timeout if e.event.is_write() => 2,
            EventKind::Timeout => 3,
            EventKind::Crash | EventKind::Reboot => 4,
        };
        let first = enabled.iter().map(class).min().filter(|&c| c < 4)?;
        // Messages on one channel arrive in the order they were sent (TCP): the first listed.
        let mut channels = std::collections::BTreeSet::new();
        let ok: Vec<usize> = (0..enabled.len())
            .filter(|&i| class(&enabled[i]) == first)
            .filter(|&i| {
                let e = &enabled[i].event;
                e.kind != EventKind::Message || channels.insert((e.from, e.to))
            })
            .collect();
        Some(ok[self.rng.gen_range(0..ok.len())])
    }
}
