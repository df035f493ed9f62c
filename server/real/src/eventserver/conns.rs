//! Who may hold a connection to the event server, and for how long.
//!
//! Any local user can connect to the server's loopback port, so connections are bounded:
//! - a connection is *pending* until it sends a request with the run's token, and only
//!   [`MAX_PENDING`] may be pending at once: a new one evicts the oldest (refusing the new one
//!   instead would let idle connections lock a hook out, since a hook's first request always
//!   comes on a new connection);
//! - at most [`Limits::max_open`] connections are open at once, pending or not; the excess is
//!   closed as soon as it is accepted;
//! - a request's head must arrive within [`HEADER_TIMEOUT`] (hyper's one timer, which also
//!   closes a kept-alive connection that stays idle that long: hooks reconnect, see
//!   `hooks/PROTOCOL.md`), and its body within [`BODY_TIMEOUT`];
//! - a request without a valid token is answered and its connection closed, its body unread.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::oneshot;

/// Connections that have not yet shown the run's token, at most.
pub const MAX_PENDING: usize = 64;
/// Connections open at once, at most (lowered to a quarter of the descriptor limit).
pub const MAX_OPEN: usize = 512;
/// A request's head (method, path, headers) must arrive within this; a kept-alive connection
/// idle this long is closed.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// A request's body must arrive within this after its head.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// The limits of one server.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub max_open: usize,
    pub max_pending: usize,
}

impl Limits {
    /// [`MAX_OPEN`] and [`MAX_PENDING`], within a quarter of this process's descriptor limit
    /// (the rest is for nodes' pipes, logs and sockets).
    pub(crate) fn for_this_process() -> Limits {
        let quarter = descriptor_limit().map_or(MAX_OPEN, |n| (n / 4) as usize);
        let max_open = MAX_OPEN.min(quarter).max(16);
        Limits {
            max_open,
            max_pending: MAX_PENDING.min(max_open / 2),
        }
    }
}

/// This process's soft limit on open descriptors.
pub fn descriptor_limit() -> Option<u64> {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) } == 0;
    (ok && l.rlim_cur != libc::RLIM_INFINITY).then_some(l.rlim_cur)
}

/// What the server did with connections, for the run's statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnStats {
    pub accepted: u64,
    /// Closed at once: the server already had its maximum open.
    pub refused: u64,
    /// Closed while pending, to make room for a newer connection.
    pub evicted: u64,
    /// Accepts that failed (out of descriptors, mostly); the server backs off and goes on.
    pub accept_errors: u64,
    /// Open now, and the most open at once.
    pub open: usize,
    pub peak: usize,
}

pub(crate) struct Conns {
    limits: Limits,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    next: u64,
    /// Pending connections, oldest first, with the sender that closes each.
    pending: VecDeque<(u64, oneshot::Sender<()>)>,
    stats: ConnStats,
}

/// One admitted connection. Dropped when its task ends.
pub(crate) struct Ticket {
    id: u64,
    trusted: AtomicBool,
    conns: Arc<Conns>,
}

impl Conns {
    pub(crate) fn new(limits: Limits) -> Arc<Conns> {
        Arc::new(Conns {
            limits,
            inner: Mutex::new(Inner::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Admit a just-accepted connection: `None` if the server is full (close it), else its
    /// ticket and what resolves with `Ok` when it is evicted (and with `Err` once it is
    /// trusted: it stays). Evicts the oldest pending connection when too many are pending.
    pub(crate) fn admit(self: &Arc<Self>) -> Option<(Arc<Ticket>, oneshot::Receiver<()>)> {
        let mut inner = self.lock();
        inner.stats.accepted += 1;
        if inner.stats.open >= self.limits.max_open {
            inner.stats.refused += 1;
            return None;
        }
        if inner.pending.len() >= self.limits.max_pending {
            if let Some((_, close)) = inner.pending.pop_front() {
                inner.stats.evicted += 1;
                let _ = close.send(());
            }
        }
        let id = inner.next;
        inner.next += 1;
        let (tx, rx) = oneshot::channel();
        inner.pending.push_back((id, tx));
        inner.stats.open += 1;
        inner.stats.peak = inner.stats.peak.max(inner.stats.open);
        let ticket = Arc::new(Ticket {
            id,
            trusted: AtomicBool::new(false),
            conns: self.clone(),
        });
        Some((ticket, rx))
    }

    pub(crate) fn accept_failed(&self) {
        self.lock().stats.accept_errors += 1;
    }

    pub(crate) fn stats(&self) -> ConnStats {
        self.lock().stats
    }

    fn forget(&self, id: u64) {
        self.lock().pending.retain(|(p, _)| *p != id);
    }
}

impl Ticket {
    /// The connection sent the run's token: it is no longer pending and cannot be evicted.
    pub(crate) fn trust(&self) {
        if !self.trusted.swap(true, Ordering::Relaxed) {
            self.conns.forget(self.id);
        }
    }

    pub(crate) fn trusted(&self) -> bool {
        self.trusted.load(Ordering::Relaxed)
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut inner = self.conns.lock();
        inner.stats.open -= 1;
        inner.pending.retain(|(p, _)| *p != self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_open: usize, max_pending: usize) -> Arc<Conns> {
        Conns::new(Limits {
            max_open,
            max_pending,
        })
    }

    #[test]
    fn the_oldest_pending_connection_makes_room_for_a_new_one() {
        let c = limits(10, 2);
        let (_a, mut ra) = c.admit().unwrap();
        let (_b, mut rb) = c.admit().unwrap();
        let (_c, _rc) = c.admit().unwrap();
        assert_eq!(ra.try_recv(), Ok(()), "the oldest is told to close");
        assert!(rb.try_recv().is_err(), "the next one stays");
        assert_eq!(c.stats().evicted, 1);
    }

    #[test]
    fn trusted_connections_are_never_evicted_and_the_excess_is_refused() {
        let c = limits(3, 2);
        let (a, mut ra) = c.admit().unwrap();
        a.trust();
        assert!(matches!(
            ra.try_recv(),
            Err(oneshot::error::TryRecvError::Closed)
        ));
        let (_b, _rb) = c.admit().unwrap();
        let (_c, _rc) = c.admit().unwrap();
        assert!(c.admit().is_none(), "three open is the maximum");
        assert_eq!(c.stats().refused, 1);
        drop(a);
        assert_eq!(c.stats().open, 2);
        assert!(c.admit().is_some(), "a closed connection frees its place");
    }

    #[test]
    fn limits_follow_the_descriptor_limit() {
        let l = Limits::for_this_process();
        assert!(l.max_pending <= l.max_open / 2 && l.max_open <= MAX_OPEN);
        if let Some(n) = descriptor_limit() {
            assert!(l.max_open as u64 <= (n / 4).max(16));
        }
    }
}
