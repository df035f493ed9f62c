//! Zeller's ddmin ("Simplifying and Isolating Failure-Inducing Input", 2002) over a list.
//!
//! One change from the paper: a passing test hands back the list to go on from, which need
//! not be the subset tried. Here that is the run a candidate actually made, whose default-order
//! tail may hold events the candidate did not name; the caller's test guarantees that what it
//! hands back is strictly simpler, which is what makes this end.

use std::ops::Range;

use anyhow::Result;

/// `test(candidate)`: `Some(next)` if the candidate still fails (violates) and is simpler.
pub type Test<'t, T> = dyn FnMut(&[T]) -> Result<Option<Vec<T>>> + 't;

/// Reduce `items` by removing chunks while `test` accepts: each chunk alone, then each
/// chunk's complement, at granularity 2, 4, 8, ... until chunks are single items.
pub fn ddmin<T: Clone>(mut items: Vec<T>, test: &mut Test<'_, T>) -> Result<Vec<T>> {
    let mut n = 2;
    while items.len() >= 2 {
        let chunks = split(items.len(), n);
        let mut next = None;
        for c in &chunks {
            if let Some(found) = test(&items[c.clone()])? {
                next = Some((found, 2));
                break;
            }
        }
        // At granularity 2 the complements are the subsets just tried.
        if next.is_none() && n > 2 {
            for c in &chunks {
                let rest: Vec<T> = [&items[..c.start], &items[c.end..]].concat();
                if let Some(found) = test(&rest)? {
                    next = Some((found, (n - 1).max(2)));
                    break;
                }
            }
        }
        match next {
            Some((found, granularity)) => {
                items = found;
                n = granularity;
            }
            None if n >= items.len() => break,
            None => n = (2 * n).min(items.len()),
        }
    }
    Ok(items)
}

/// `len` items in `n` contiguous chunks of near-equal size, in order.
fn split(len: usize, n: usize) -> Vec<Range<usize>> {
    let mut out = Vec::with_capacity(n);
    let mut start = 0;
    for k in 0..n {
        let end = start + (len - start) / (n - k);
        out.push(start..end);
        start = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The paper's example shape: the failure needs items 1 and 7 together.
    #[test]
    fn finds_the_two_items_that_fail_together() {
        let items: Vec<u32> = (0..8).collect();
        let mut tests = 0;
        let mut test = |c: &[u32]| -> Result<Option<Vec<u32>>> {
            tests += 1;
            Ok((c.contains(&1) && c.contains(&7) && c.len() < 8).then(|| c.to_vec()))
        };
        let out = ddmin(items, &mut test).unwrap();
        assert_eq!(out, vec![1, 7]);
        assert!(tests < 40, "{tests} tests");
    }

    #[test]
    fn a_single_failing_item_is_found() {
        let mut test =
            |c: &[u32]| -> Result<Option<Vec<u32>>> { Ok(c.contains(&5).then(|| c.to_vec())) };
        assert_eq!(ddmin((0..20).collect(), &mut test).unwrap(), vec![5]);
    }

    #[test]
    fn chunks_cover_the_list_in_order() {
        assert_eq!(split(5, 2), vec![0..2, 2..5]);
        assert_eq!(split(7, 3), vec![0..2, 2..4, 4..7]);
        assert_eq!(split(3, 3), vec![0..1, 1..2, 2..3]);
    }
}
