//! What a node caught: panics (of any thread; the process may survive them) and errors its
//! handlers hand over with [`crate::Hook::error`] / [`crate::Hook::failed`] instead of only
//! logging them. Each is a record `{type, message, where, frames}`, kept for the process's life
//! (one incarnation), and every state the hook reports afterwards carries them all as the node
//! variable `exceptions` (absent while there are none), which flymc's `no-exception` property
//! checks against the system's and the workload's allow lists.

use std::panic::Location;
use std::sync::{Mutex, Once};

use serde_json::{json, Map, Value};

/// The node variable the records go to.
pub const EXCEPTIONS_VAR: &str = "exceptions";

static RECORDS: Mutex<Vec<Value>> = Mutex::new(Vec::new());
static PANIC_HOOK: Once = Once::new();

fn records() -> std::sync::MutexGuard<'static, Vec<Value>> {
    RECORDS.lock().unwrap_or_else(|p| p.into_inner())
}

fn push(ty: &str, message: Option<String>, place: String) {
    records().push(json!({
        "type": ty,
        "message": message,
        "where": place,
        "frames": [],
    }));
}

fn place(l: &Location<'_>) -> String {
    format!("{}:{}", l.file(), l.line())
}

/// Record a panic of any thread as `{type: "panic", message, where: "file:line"}`, then do
/// what the panic hook installed before did (print it). Installed once per process.
pub(crate) fn install_panic_hook() {
    PANIC_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let p = info.payload();
            let message = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned());
            let at = info.location().map_or_else(|| "?".into(), place);
            push("panic", message, at);
            previous(info);
        }));
    });
}

/// Record an error of kind `kind` at the caller's location (see [`crate::Hook::error`]).
#[track_caller]
pub fn error(kind: &str, message: impl std::fmt::Display) {
    push(kind, Some(message.to_string()), place(Location::caller()));
}

/// Record `err` at the caller's location, its type (without generic parameters) as the kind
/// and its message with its sources (see [`crate::Hook::failed`]).
#[track_caller]
pub fn failed<E: std::error::Error + ?Sized>(err: &E) {
    let full = std::any::type_name::<E>();
    let ty = full.split('<').next().unwrap_or(full);
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        message = format!("{message}: {s}");
        source = s.source();
    }
    push(ty, Some(message), place(Location::caller()));
}

/// Add the records to a state about to be reported, unless it already has the variable.
pub(crate) fn add_to(state: &mut Map<String, Value>) {
    let r = records();
    if !r.is_empty() && !state.contains_key(EXCEPTIONS_VAR) {
        state.insert(EXCEPTIONS_VAR.into(), Value::Array(r.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Outer(std::io::Error);

    impl std::fmt::Display for Outer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("cannot save")
        }
    }

    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn records_say_kind_message_and_where_and_go_into_every_later_state() {
        let mut before = Map::new();
        before.insert(EXCEPTIONS_VAR.into(), json!("the node's own"));
        add_to(&mut before);
        assert_eq!(before[EXCEPTIONS_VAR], json!("the node's own"));
        error("lost", format!("request {}", 3));
        failed(&Outer(std::io::Error::other("disk full")));
        install_panic_hook();
        let _ = std::thread::spawn(|| panic!("worker died")).join();
        let mut state = Map::new();
        add_to(&mut state);
        let r = state[EXCEPTIONS_VAR].as_array().unwrap();
        assert_eq!(r.len(), 3, "{r:?}");
        assert_eq!(
            (&r[0]["type"], &r[0]["message"]),
            (&json!("lost"), &json!("request 3"))
        );
        assert!(r[0]["where"]
            .as_str()
            .unwrap()
            .starts_with("hooks/rust/src/caught.rs:"));
        assert_eq!(r[1]["type"], json!("flymc_hook::caught::tests::Outer"));
        assert_eq!(r[1]["message"], json!("cannot save: disk full"));
        assert_eq!(r[2]["type"], json!("panic"));
        assert_eq!(r[2]["message"], json!("worker died"));
    }
}
