//! Order policies: which enabled event a run takes when its plan's prefix names none.
//!
//! The executor follows the prefix and keeps the books (vector clocks, fault budgets, the sleep
//! set); an [`Order`] only chooses. A plan's [`Tail`](crate::plan::Tail) names the order its
//! strategy wants: the default order, a seeded random walk, PCTCP's priorities over causal
//! chains, CHESS's fair scheduler, a liveness walk, or stopping (replay). The first three hand
//! over to the fair scheduler ([`FairOrder`]) when a run reaches its event limit with a
//! liveness property failing: there is one notion of fairness.

mod default;
mod fair;
pub mod pct;
mod random;
mod stop;

use flymc_model::{Event, GlobalState};

use crate::run::Enabled;

pub use default::DefaultOrder;
pub(crate) use default::{default_pick, TimerRank};
pub use fair::{FairAfter, FairOrder, FairParams, GOOD_SAMARITAN};
pub use pct::{PctOrder, PctParams};
pub use random::RandomOrder;
pub use stop::Stop;

/// Chooses the events of a run that the plan's prefix leaves open.
pub trait Order {
    /// The index in `enabled` of the event to run next, passing over those `asleep`; `None`
    /// when this order runs none of them, which ends the run.
    fn pick(&mut self, enabled: &[Enabled], asleep: &dyn Fn(&Enabled) -> bool) -> Option<usize>;

    /// Step `step` runs `enabled[chosen]`, whoever chose it (the prefix or this order).
    fn observe(&mut self, _enabled: &[Enabled], _chosen: usize, _step: usize) {}

    /// The order to go on with, for up to the event limit again, when the run reaches its limit
    /// in a state that fails a liveness property; `None` ends the run there. Asked at the limit,
    /// before liveness is judged.
    fn continuation(&mut self) -> Option<Box<dyn Order>> {
        None
    }

    /// Step's `event` led from `before` to `after` (whoever chose it), once the target settled.
    fn settled(&mut self, _event: &Event, _before: &GlobalState, _after: &GlobalState) {}

    /// Asked when the run reaches its limit: a node this order kept scheduling that never
    /// yielded (a good-samaritan violation, CHESS), said in one line.
    fn unfair(&self) -> Option<String> {
        None
    }
}
