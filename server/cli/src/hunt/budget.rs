//! A hunt's budget: a time for the whole hunt, a path count per exploration (one workload and
//! seed), or both (`30m,500paths`).

use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Budget {
    pub time: Option<Duration>,
    pub paths: Option<u64>,
}

/// The longest time a budget may give: a year is far past any hunt, and what a deadline
/// computed from it (`now + budget`) can hold.
pub const MAX_TIME: Duration = Duration::from_secs(366 * 24 * 3600);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BadBudget {
    #[error("budget `{0}` is not a time (`120s`, `30m`, `2h`) or a path count (`500paths`), or both separated by a comma")]
    Form(String),
    #[error("budget `{0}` is longer than the {max}h a budget may give (366 days): give a shorter time or a path count", max = MAX_TIME.as_secs() / 3600)]
    TooLong(String),
}

impl std::str::FromStr for Budget {
    type Err = BadBudget;
    fn from_str(text: &str) -> Result<Budget, BadBudget> {
        let bad = || BadBudget::Form(text.to_string());
        let mut b = Budget::default();
        for part in text.split(',').map(str::trim) {
            let compact: String = part.chars().filter(|c| !c.is_whitespace()).collect();
            let digits = compact
                .find(|c: char| !c.is_ascii_digit())
                .ok_or_else(bad)?;
            let n: u64 = compact[..digits].parse().map_err(|_| bad())?;
            if n == 0 {
                return Err(bad());
            }
            let unit = match &compact[digits..] {
                "s" | "sec" | "secs" => 1,
                "m" | "min" | "mins" => 60,
                "h" | "hour" | "hours" => 3600,
                "paths" | "path" => {
                    if b.paths.replace(n).is_some() {
                        return Err(bad());
                    }
                    continue;
                }
                _ => return Err(bad()),
            };
            let time = n
                .checked_mul(unit)
                .map(Duration::from_secs)
                .filter(|t| *t <= MAX_TIME)
                .ok_or_else(|| BadBudget::TooLong(text.to_string()))?;
            if b.time.replace(time).is_some() {
                return Err(bad());
            }
        }
        Ok(b)
    }
}

impl std::fmt::Display for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if let Some(t) = self.time {
            parts.push(format!("{}s", t.as_secs()));
        }
        if let Some(p) = self.paths {
            parts.push(format!("{p}paths"));
        }
        write!(f, "{}", parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_paths_and_both() {
        let b: Budget = "120s".parse().unwrap();
        assert_eq!(b.time, Some(Duration::from_secs(120)));
        let b: Budget = "30m, 500 paths".parse().unwrap();
        assert_eq!(
            (b.time, b.paths),
            (Some(Duration::from_secs(1800)), Some(500))
        );
        assert_eq!("2h".parse::<Budget>().unwrap().to_string(), "7200s");
        for bad in ["", "10", "0s", "5x", "1s,2s", "s", "10paths,3paths"] {
            assert!(bad.parse::<Budget>().is_err(), "{bad}");
        }
    }

    #[test]
    fn times_past_a_year_are_refused_not_wrapped() {
        // 307445734561825861 minutes wraps to 44 seconds in u64 seconds.
        for long in [
            "18446744073709551615s",
            "307445734561825861m",
            "8785h",
            "1000000h,5paths",
        ] {
            assert_eq!(
                long.parse::<Budget>(),
                Err(BadBudget::TooLong(long.to_string())),
                "{long}"
            );
        }
        assert_eq!("8784h".parse::<Budget>().unwrap().time, Some(MAX_TIME));
        let many = "18446744073709551615paths".parse::<Budget>().unwrap();
        assert_eq!(many.paths, Some(u64::MAX));
    }
}
