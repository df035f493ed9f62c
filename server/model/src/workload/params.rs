//! A workload's `[params]` as the system's own type: a system declares a
//! `#[derive(Deserialize)] #[serde(deny_unknown_fields, default)]` struct and calls
//! [`Workload::params`]; a key it does not know or a value of the wrong type is refused with the
//! workload file's line and column.

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

use super::{line_col, Workload, WorkloadError};
use crate::TargetError;

/// The workload document as far as parameters go (its other keys are [`Workload::parse`]'s).
#[derive(Deserialize)]
struct Doc<T> {
    params: Option<T>,
}

impl Workload {
    /// The `[params]` table as `T`; errors are one line, `file:line:column: message`.
    pub fn params<T: DeserializeOwned>(&self) -> Result<T, WorkloadError> {
        // The map, not the file, is what counts: tests edit parameters in code after parsing.
        serde_path_to_error::deserialize(Value::Object(self.params.clone())).map_err(|e| {
            self.located::<T>().unwrap_or_else(|| {
                let path = match e.path().to_string().as_str() {
                    "." => "params".to_string(),
                    p => format!("params.{p}"),
                };
                WorkloadError::Params {
                    at: format!("<workload {}>", self.name),
                    message: explain(&path, &e.inner().to_string()),
                }
            })
        })
    }

    /// The error again, found in the file (for its line and column) if the parameters are still
    /// the file's.
    fn located<T: DeserializeOwned>(&self) -> Option<WorkloadError> {
        let text = self.source.as_deref()?;
        let file: Doc<toml::Table> = toml::from_str(text).ok()?;
        match serde_json::to_value(file.params?) {
            Ok(Value::Object(m)) if m == self.params => {}
            _ => return None,
        }
        let e =
            serde_path_to_error::deserialize::<_, Doc<T>>(toml::Deserializer::new(text)).err()?;
        let (line, column) = line_col(text, e.inner().span()?.start);
        Some(WorkloadError::Params {
            at: format!("{}:{line}:{column}", self.file.display()),
            message: explain(&e.path().to_string(), e.inner().message()),
        })
    }
}

/// Parameters that do not fit are a workload that does not fit the system reading them.
impl From<WorkloadError> for TargetError {
    fn from(e: WorkloadError) -> TargetError {
        TargetError::Workload(e.to_string())
    }
}

/// serde's message about the value at `path`, in the words of a TOML file.
fn explain(path: &str, message: &str) -> String {
    if let Some(rest) = message.strip_prefix("unknown field `") {
        let (key, expected) = rest.split_once('`').unwrap_or((rest, ""));
        let valid = backticked(expected).join(", ");
        return match path.rsplit_once('.').map_or(path, |(table, _)| table) {
            "params" => format!("unknown parameter `{key}` in [params]; valid: {valid}"),
            table => format!("unknown key `{key}` in {table}; valid: {valid}"),
        };
    }
    if let Some(rest) = message.strip_prefix("unknown variant `") {
        let (value, expected) = rest.split_once('`').unwrap_or((rest, ""));
        let valid = backticked(expected).join(", ");
        return format!("{path}: unknown value `{value}`; valid: {valid}");
    }
    if let Some(field) = message
        .strip_prefix("missing field `")
        .and_then(|r| r.strip_suffix('`'))
    {
        return format!("{path}.{field} is missing");
    }
    let got_want = ["invalid type: ", "invalid value: "]
        .iter()
        .find_map(|kind| message.strip_prefix(kind)?.rsplit_once(", expected "));
    match got_want {
        Some((got, want)) => format!("{path} must be {}, got {got}", toml_words(want)),
        None => format!("{path}: {message}"),
    }
}

/// What serde quotes in backticks, in order: the keys or values it would have taken.
fn backticked(s: &str) -> Vec<&str> {
    s.split('`').skip(1).step_by(2).collect()
}

/// What serde calls a Rust type, as a TOML value.
fn toml_words(want: &str) -> String {
    let max = match want {
        "u8" => u8::MAX as u64,
        "u16" => u16::MAX as u64,
        "u32" => u32::MAX as u64,
        _ => 0,
    };
    match want {
        _ if max > 0 => format!("an integer 0..={max}"),
        "u64" | "usize" => "a non-negative integer".into(),
        "i8" | "i16" | "i32" | "i64" | "isize" => "an integer".into(),
        "a map" => "a table".into(),
        "a sequence" => "an array".into(),
        w if w.starts_with("struct ") => "a table".into(),
        w => match w.strip_prefix("a tuple of size ") {
            Some(n) => format!("an array of {n} items"),
            None => w.into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Write {
        to: usize,
        value: u64,
    }

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields, default)]
    struct Params {
        variant: String,
        rounds: u32,
        writes: Vec<Write>,
        row: BTreeMap<String, String>,
    }

    const HEAD: &str = "version = 1\nsystem = \"x\"\nnodes = 3\nmax_events = 10\n";

    fn error(params: &str) -> String {
        let text = format!("{HEAD}[params]\n{params}\n");
        let w = Workload::parse(Path::new("workloads/x/w.toml"), &text).unwrap();
        let e = w.params::<Params>().unwrap_err().to_string();
        assert!(!e.contains('\n'), "one line: {e}");
        e
    }

    #[test]
    fn parameters_become_the_systems_type() {
        let text = format!("{HEAD}[params]\nvariant = \"v\"\nwrites = [{{ to = 1, value = 2 }}]\n");
        let w = Workload::parse(Path::new("w.toml"), &text).unwrap();
        let p: Params = w.params().unwrap();
        assert_eq!(p.variant, "v");
        assert_eq!(p.writes, vec![Write { to: 1, value: 2 }]);
        assert_eq!(p.rounds, 0, "absent parameters take their defaults");
        let none = Workload::parse(Path::new("w.toml"), HEAD).unwrap();
        assert_eq!(none.params::<Params>().unwrap(), Params::default());
    }

    #[test]
    fn unknown_keys_are_refused_with_file_line_and_column() {
        assert_eq!(
            error("variant = \"v\"\ncolour = 1"),
            "workloads/x/w.toml:7:1: unknown parameter `colour` in [params]; valid: variant, rounds, writes, row"
        );
        assert_eq!(
            error("writes = [{ to = 1, value = 2, at = 3 }]"),
            "workloads/x/w.toml:6:32: unknown key `at` in params.writes[0]; valid: to, value"
        );
    }

    #[test]
    fn wrong_types_are_refused_with_file_line_and_column() {
        assert_eq!(
            error("variant = 3"),
            "workloads/x/w.toml:6:11: params.variant must be a string, got integer `3`"
        );
        assert_eq!(
            error("rounds = -1"),
            "workloads/x/w.toml:6:10: params.rounds must be an integer 0..=4294967295, got integer `-1`"
        );
        assert!(error("row = 5").ends_with("params.row must be a table, got integer `5`"));
        assert!(
            error("writes = [5]").ends_with("params.writes[0] must be a table, got integer `5`")
        );
        assert!(
            error("row = { a = 1 }").ends_with("params.row.a must be a string, got integer `1`")
        );
        assert!(error("writes = [{ to = 1 }]").ends_with("params.writes[0].value is missing"));
    }

    #[test]
    fn parameters_made_in_code_are_named_by_the_workload() {
        let mut w = Workload::parse(Path::new("w.toml"), HEAD).unwrap();
        w.params.insert("rounds".into(), "many".into());
        assert_eq!(
            w.params::<Params>().unwrap_err().to_string(),
            "<workload w>: params.rounds must be an integer 0..=4294967295, got string \"many\""
        );
    }
}
