//! `--param KEY=VALUE`: a workload parameter given on the command line. It is set over the
//! workload file's `[params]` and recorded in path files, so replays run with it; the system
//! reads it as it reads the file's (the CLI knows no system's parameters).

use serde::Deserialize;
use serde_json::Value;

use flymc_model::{System, TargetError, Workload};

/// One `--param`: a key of the workload's `[params]` and its value.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub key: String,
    pub value: Value,
}

impl std::str::FromStr for Param {
    type Err = String;

    /// `KEY=VALUE`, VALUE read as a TOML value (`5000`, `true`, `[1, 2]`, `"a b"`), else
    /// taken as the string it is (`zookeeper-1419`, `/opt/zk`).
    fn from_str(s: &str) -> Result<Param, String> {
        let Some((key, value)) = s.split_once('=') else {
            return Err(format!(
                "`{s}` is not KEY=VALUE: write a key of the workload's [params], `=` and its value"
            ));
        };
        let key = key.trim();
        if key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(format!(
                "`{key}` is not a parameter name: write letters, digits, `_` or `-` before the `=`"
            ));
        }
        Ok(Param {
            key: key.into(),
            value: toml_value(value).unwrap_or_else(|| Value::from(value)),
        })
    }
}

/// `text` as one TOML value, unless it is none (or a date, which stays the text it was).
fn toml_value(text: &str) -> Option<Value> {
    let v = toml::Value::deserialize(toml::de::ValueDeserializer::new(text)).ok()?;
    match v {
        toml::Value::Datetime(_) => None,
        v => serde_json::to_value(v).ok(),
    }
}

/// Set `params` over `w`'s, and check now, with the system, that it takes them: a bad one is
/// one line before anything starts. A parameter that chooses the programs a system runs
/// ([`System::program_params`], a folder) is recorded absolute, so a replay from elsewhere
/// finds the same folder.
pub fn apply(params: &[Param], system: &dyn System, w: &mut Workload) -> Result<(), TargetError> {
    for p in params {
        let value = match &p.value {
            Value::String(dir) if system.about().program_params.contains(&p.key) => {
                let dir = std::path::Path::new(dir);
                let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
                Value::from(dir.display().to_string())
            }
            v => v.clone(),
        };
        w.set_param(&p.key, value);
    }
    if params.is_empty() {
        return Ok(());
    }
    // Building a target reads the parameters (and starts nothing).
    system.target(w).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param(s: &str) -> Result<Param, String> {
        s.parse()
    }

    #[test]
    fn values_are_toml_values_or_else_strings() {
        let v = |s: &str| param(s).unwrap().value;
        assert_eq!(v("settle_timeout_ms=5000"), Value::from(5000));
        assert_eq!(v("staggered_start=true"), Value::from(true));
        assert_eq!(v("epochs=[1, 2]"), serde_json::json!([1, 2]));
        assert_eq!(v("variant=zookeeper-1419"), Value::from("zookeeper-1419"));
        assert_eq!(v("variant=3.8.0"), Value::from("3.8.0"));
        assert_eq!(v("log=\"a b\""), Value::from("a b"));
        assert_eq!(v("home=/opt/zk"), Value::from("/opt/zk"));
        assert_eq!(v("day=2024-01-01"), Value::from("2024-01-01"));
        assert_eq!(v("empty="), Value::from(""));
        assert_eq!(param("a=b=c").unwrap().value, Value::from("b=c"));
    }

    #[test]
    fn a_bad_param_says_what_to_write() {
        assert!(param("variant").unwrap_err().contains("is not KEY=VALUE"));
        assert!(param("=3").unwrap_err().contains("is not a parameter name"));
        assert!(param("a b=3")
            .unwrap_err()
            .contains("is not a parameter name"));
    }
}
