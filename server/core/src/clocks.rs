//! Causal bookkeeping for a run: per-node vector clocks, the clock of each executed step, and
//! the creation clock of each event seen pending.

use std::collections::HashMap;

use flymc_model::{Event, EventId, VectorClock};

use crate::run::Enabled;

#[derive(Clone)]
pub(crate) struct Clocks {
    nodes: Vec<VectorClock>,
    steps: HashMap<EventId, VectorClock>,
    created: HashMap<EventId, VectorClock>,
}

impl Clocks {
    pub fn new(nodes: usize) -> Self {
        Clocks {
            nodes: vec![VectorClock::new(nodes); nodes],
            steps: HashMap::new(),
            created: HashMap::new(),
        }
    }

    fn zero(&self) -> VectorClock {
        VectorClock::new(self.nodes.len())
    }

    /// `pending` with their creation clocks: an event is created by the step that ran its
    /// parent, and keeps the clock it was first seen with.
    pub fn enabled(&mut self, pending: Vec<Event>) -> Vec<Enabled> {
        let zero = self.zero();
        pending
            .into_iter()
            .map(|event| {
                let vc = self
                    .created
                    .entry(event.id)
                    .or_insert_with(|| match event.parent {
                        Some(p) => self.steps.get(&p).cloned().unwrap_or_else(|| zero.clone()),
                        None => zero.clone(),
                    })
                    .clone();
                Enabled { event, vc }
            })
            .collect()
    }

    /// The clock of executed step `id`, zero if it never ran.
    pub fn of_step(&self, id: EventId) -> VectorClock {
        self.steps.get(&id).cloned().unwrap_or_else(|| self.zero())
    }

    /// Run `e` at its node: the node learns what `e`'s creation saw and ticks.
    pub fn step(&mut self, e: &Enabled) -> VectorClock {
        let node = e.event.to;
        self.nodes[node].join(&e.vc);
        self.nodes[node].tick(node);
        let vc = self.nodes[node].clone();
        self.steps.insert(e.event.id, vc.clone());
        vc
    }
}
