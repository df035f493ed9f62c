//! The jobs of an exploration (`--jobs N`): N targets (with what the explore loop keeps beside
//! each), each owned by its own thread, each running the tasks handed to it one after another.
//!
//! This is mechanism only. Which job runs a task does not matter (every target is a fresh
//! cluster of the same system; real ones on their own addresses, ports and event server), and
//! results come back in the order they finish: putting them in path order is the explore
//! loop's business.

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread;

/// What a job does with a task on its own `S` (its target, and what it keeps with it).
pub(crate) type Work<'w, S, T, R> = dyn Fn(&mut S, T) -> R + Sync + 'w;

/// Handing tasks to idle jobs and collecting what they finished.
pub(crate) struct Jobs<T, R> {
    inboxes: Vec<Sender<T>>,
    idle: Vec<usize>,
    finished: Receiver<(usize, thread::Result<R>)>,
}

impl<T, R> Jobs<T, R> {
    #[cfg(test)]
    pub fn idle(&self) -> usize {
        self.idle.len()
    }

    /// Start `task` on an idle job: the caller has fewer tasks under way than jobs.
    pub fn give(&mut self, task: T) {
        let job = self.idle.pop().expect("give needs an idle job");
        // A job only ends when its inbox closes, so it is there to receive.
        let _ = self.inboxes[job].send(task);
    }

    /// The next task to finish (its job is idle again); a panic in a job is resumed here.
    pub fn next(&mut self) -> R {
        let (job, result) = self
            .finished
            .recv()
            .expect("a busy job either sends its result or its panic");
        self.idle.push(job);
        result.unwrap_or_else(|p: Box<dyn Any + Send>| panic::resume_unwind(p))
    }
}

/// Run `body` with one job per target, each doing `work` with the tasks `body` hands out.
/// When `body` returns, the jobs finish the tasks they hold (their results are dropped) and
/// end, dropping their targets.
pub(crate) fn scoped<'w, S: Send, T: Send, R: Send, O>(
    targets: Vec<S>,
    work: &Work<'w, S, T, R>,
    body: impl FnOnce(&mut Jobs<T, R>) -> O,
) -> O {
    thread::scope(|s| {
        let (done, finished) = channel();
        let mut inboxes = Vec::new();
        for (job, mut target) in targets.into_iter().enumerate() {
            let (inbox, tasks) = channel::<T>();
            inboxes.push(inbox);
            let done = done.clone();
            s.spawn(move || {
                while let Ok(task) = tasks.recv() {
                    let r = panic::catch_unwind(AssertUnwindSafe(|| work(&mut target, task)));
                    let panicked = r.is_err();
                    if done.send((job, r)).is_err() || panicked {
                        break;
                    }
                }
            });
        }
        // Lowest job first, so a single task always goes to job 0.
        let idle = (0..inboxes.len()).rev().collect();
        let mut jobs = Jobs {
            inboxes,
            idle,
            finished,
        };
        body(&mut jobs)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{workload, TinySystem};
    use flymc_model::{System, Target};

    fn targets(n: usize) -> Vec<Box<dyn Target>> {
        let w = workload(1, "[]", "");
        (0..n).map(|_| TinySystem.target(&w).unwrap()).collect()
    }

    #[test]
    fn every_task_is_run_once_by_some_job() {
        let work = |_: &mut Box<dyn Target>, k: u32| k * 10;
        let mut got = scoped(targets(3), &work, |jobs| {
            let mut got = Vec::new();
            for k in 0..7 {
                if jobs.idle() == 0 {
                    got.push(jobs.next());
                }
                jobs.give(k);
            }
            while got.len() < 7 {
                got.push(jobs.next());
            }
            assert_eq!(jobs.idle(), 3);
            got
        });
        got.sort();
        assert_eq!(got, vec![0, 10, 20, 30, 40, 50, 60]);
    }

    #[test]
    fn a_panic_in_a_job_reaches_the_caller() {
        let work = |_: &mut Box<dyn Target>, k: u32| {
            assert!(k != 1, "task one fails");
            k
        };
        let r = panic::catch_unwind(AssertUnwindSafe(|| {
            scoped(targets(2), &work, |jobs| {
                jobs.give(0);
                jobs.give(1);
                jobs.next() + jobs.next()
            })
        }));
        assert!(r.is_err());
    }
}
