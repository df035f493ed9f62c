//! Vector clocks, giving happens-before between the events of one path.

use serde::{Deserialize, Serialize};

use crate::event::NodeId;

/// One counter per node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct VectorClock(pub Vec<u32>);

impl VectorClock {
    pub fn new(nodes: usize) -> Self {
        VectorClock(vec![0; nodes])
    }

    /// Component-wise maximum, in place.
    pub fn join(&mut self, other: &VectorClock) {
        if self.0.len() < other.0.len() {
            self.0.resize(other.0.len(), 0);
        }
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a = (*a).max(*b);
        }
    }

    pub fn tick(&mut self, node: NodeId) {
        if self.0.len() <= node {
            self.0.resize(node + 1, 0);
        }
        self.0[node] += 1;
    }

    pub fn get(&self, node: NodeId) -> u32 {
        self.0.get(node).copied().unwrap_or(0)
    }

    /// `self <= other` component-wise.
    pub fn le(&self, other: &VectorClock) -> bool {
        (0..self.0.len().max(other.0.len())).all(|i| self.get(i) <= other.get(i))
    }

    /// Strict happens-before: `self <= other` and not equal.
    pub fn before(&self, other: &VectorClock) -> bool {
        self.le(other) && self != other
    }

    /// Neither happens before the other.
    pub fn concurrent(&self, other: &VectorClock) -> bool {
        !self.le(other) && !other.le(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn happens_before_and_concurrency() {
        let mut a = VectorClock::new(2);
        a.tick(0);
        let mut b = a.clone();
        b.tick(1);
        let mut c = VectorClock::new(2);
        c.tick(1);
        assert!(a.before(&b));
        assert!(!b.before(&a));
        assert!(a.concurrent(&c));
        let mut j = a.clone();
        j.join(&c);
        assert_eq!(j.0, vec![1, 1]);
    }
}
