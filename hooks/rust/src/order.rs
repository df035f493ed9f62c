//! The hook's local bookkeeping, free of I/O: which enable order may run next (local ordering
//! enforcement, FlyMC §5), which event is in progress, and the per-parent sequence numbers of
//! intercepted events.

use std::collections::{HashMap, HashSet, VecDeque};

use crate::protocol::{EventId, Kind, Order};

#[derive(Default)]
pub(crate) struct Local {
    /// Orders received and not yet started, in `seq` order.
    queue: VecDeque<Order>,
    /// Highest order `seq` received.
    pub(crate) after: u64,
    /// The enabled event being processed (delivered, not yet done).
    pub(crate) current: Option<EventId>,
    /// The last event reported done.
    pub(crate) last_done: Option<EventId>,
    /// Startup finished (`ready` was reported).
    pub(crate) ready: bool,
    /// Crash points waiting for their enable order.
    awaited: HashSet<EventId>,
    /// Next `seq` per (parent, kind, name, destination).
    seqs: HashMap<(Option<EventId>, Kind, String, usize), u32>,
    /// Intercept reports in flight; `done` waits for them.
    pub(crate) outstanding: usize,
    /// Why the hook stopped working (the server went away, or rejected a poll).
    pub(crate) fatal: Option<String>,
    /// The state last reported done: what the node says on going on after a pause (the node
    /// program hands its state over only at `done`).
    pub(crate) reported: serde_json::Map<String, serde_json::Value>,
}

impl Local {
    /// Add orders from a poll answer; repeats (an order already received) are ignored.
    pub(crate) fn push(&mut self, orders: Vec<Order>) {
        for o in orders {
            if o.seq > self.after {
                self.after = o.seq;
                self.queue.push_back(o);
            }
        }
    }

    /// May the front order start now? Only when nothing is in progress and the event enabled
    /// before it at this node is done.
    fn front_startable(&self) -> Option<&Order> {
        let o = self.queue.front()?;
        (self.ready && self.current.is_none() && o.previous == self.last_done).then_some(o)
    }

    /// The next order to deliver to the node's handler, if it may start now.
    pub(crate) fn take_delivery(&mut self) -> Option<Order> {
        let id = self.front_startable()?.event.id;
        if self.awaited.contains(&id) {
            return None;
        }
        let o = self.queue.pop_front()?;
        self.current = Some(id);
        Some(o)
    }

    /// The enable order of crash point `id`, if it may start now.
    pub(crate) fn take_crash_point(&mut self, id: EventId) -> Option<Order> {
        if self.front_startable()?.event.id != id {
            return None;
        }
        self.awaited.remove(&id);
        let o = self.queue.pop_front()?;
        self.current = Some(id);
        Some(o)
    }

    pub(crate) fn await_crash_point(&mut self, id: EventId) {
        self.awaited.insert(id);
    }

    /// The parent of an event intercepted now: the event in progress, else the last one done
    /// (a late send from a background task), else startup (`None`).
    pub(crate) fn default_parent(&self) -> Option<EventId> {
        self.current.or(self.last_done)
    }

    pub(crate) fn next_seq(
        &mut self,
        parent: Option<EventId>,
        kind: Kind,
        name: &str,
        to: usize,
    ) -> u32 {
        let n = self
            .seqs
            .entry((parent, kind, name.to_string(), to))
            .or_insert(0);
        *n += 1;
        *n - 1
    }

    /// What a `done` now finishes: `Ok(None)` for startup, `Ok(Some(id))` for an event.
    pub(crate) fn finishing(&self) -> Result<Option<EventId>, &'static str> {
        match (self.ready, self.current) {
            (false, _) => Ok(None),
            (true, Some(id)) => Ok(Some(id)),
            (true, None) => Err("done() called with no enabled event in progress"),
        }
    }

    /// Record that `finishing()`'s answer was reported done.
    pub(crate) fn finished(&mut self, event: Option<EventId>) {
        match event {
            None => self.ready = true,
            Some(id) => {
                self.current = None;
                self.last_done = Some(id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::WireEvent;

    fn order(seq: u64, id: u64, previous: Option<u64>) -> Order {
        Order {
            seq,
            previous: previous.map(EventId),
            event: WireEvent {
                id: EventId(id),
                kind: Kind::Message,
                name: "m".into(),
                from: Some(1),
                to: 0,
                fields: Default::default(),
                payload: Default::default(),
                parent: None,
            },
        }
    }

    #[test]
    fn an_order_waits_until_the_previous_event_is_done() {
        let mut l = Local::default();
        l.push(vec![order(1, 10, None), order(2, 20, Some(10))]);
        assert!(l.take_delivery().is_none(), "nothing before ready");
        l.finished(l.finishing().unwrap());
        assert_eq!(l.take_delivery().unwrap().event.id, EventId(10));
        // 20 was enabled right after 10: it is held while 10 is in progress.
        assert!(l.take_delivery().is_none());
        assert_eq!(l.finishing().unwrap(), Some(EventId(10)));
        l.finished(Some(EventId(10)));
        assert_eq!(l.take_delivery().unwrap().event.id, EventId(20));
        l.finished(Some(EventId(20)));
        assert!(l.finishing().is_err(), "done with nothing in progress");
    }

    #[test]
    fn an_order_naming_an_event_not_done_here_is_held() {
        let mut l = Local::default();
        l.finished(None);
        l.push(vec![order(1, 20, Some(10))]);
        assert!(l.take_delivery().is_none());
        // Repeated orders (a retried poll) are ignored.
        l.push(vec![order(1, 20, Some(10))]);
        assert_eq!(l.queue.len(), 1);
    }

    #[test]
    fn crash_points_take_their_own_order() {
        let mut l = Local::default();
        l.finished(None);
        l.push(vec![order(1, 10, None)]);
        l.take_delivery().unwrap();
        l.await_crash_point(EventId(30));
        l.finished(Some(EventId(10)));
        l.push(vec![order(2, 30, Some(10))]);
        assert!(
            l.take_delivery().is_none(),
            "a crash point's order is not a delivery"
        );
        assert_eq!(l.take_crash_point(EventId(30)).unwrap().seq, 2);
        assert_eq!(l.current, Some(EventId(30)));
    }

    #[test]
    fn sequence_numbers_count_per_parent_kind_name_and_destination() {
        let mut l = Local::default();
        let p = Some(EventId(1));
        assert_eq!(l.next_seq(p, Kind::Message, "a", 1), 0);
        assert_eq!(l.next_seq(p, Kind::Message, "a", 2), 0);
        assert_eq!(l.next_seq(p, Kind::Message, "a", 1), 1);
        assert_eq!(l.next_seq(None, Kind::Message, "a", 1), 0);
        assert_eq!(l.next_seq(p, Kind::Timeout, "a", 1), 0);
    }
}
