//! A hunt's budget: a time for the whole hunt, a path count per exploration (one workload and
//! seed), or both (`30m,500paths`).

use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Budget {
    pub time: Option<Duration>,
    pub paths: Option<u64>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("budget `{0}` is not a time (`120s`, `30m`, `2h`) or a path count (`500paths`), or both separated by a comma")]
pub struct BadBudget(pub String);

impl std::str::FromStr for Budget {
    type Err = BadBudget;
    fn from_str(text: &str) -> Result<Budget, BadBudget> {
        let bad = || BadBudget(text.to_string());
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
            let secs = match &compact[digits..] {
                "s" | "sec" | "secs" => n,
                "m" | "min" | "mins" => n * 60,
                "h" | "hour" | "hours" => n * 3600,
                "paths" | "path" => {
                    if b.paths.replace(n).is_some() {
                        return Err(bad());
                    }
                    continue;
                }
                _ => return Err(bad()),
            };
            if b.time.replace(Duration::from_secs(secs)).is_some() {
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
}
