//! The debugger's command language: one line in, one typed [`Command`] out, or a one-line
//! complaint that says what would have been understood.

use flymc_model::{EventKind, NodeId};

/// What the user asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Forward over this many events (that the filter lets through).
    Step(usize),
    /// Backward over this many events (that the filter lets through).
    Back(usize),
    /// To the state after this many events.
    Jump(usize),
    /// The whole state, or one node's.
    State(Option<NodeId>),
    Diff(DiffWhat),
    Events,
    /// Narrow the filter (`None` fields keep what was set), or clear it.
    Filter(FilterChange),
    Where,
    Help,
    Quit,
}

/// What `diff` compares the current state with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiffWhat {
    /// The previous step's state, and for a liveness violation the nearest live path's.
    Both,
    Previous,
    Live,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FilterChange {
    Show,
    Off,
    Set {
        node: Option<NodeId>,
        kind: Option<EventKind>,
    },
}

pub const HELP: &str = "\
commands (short forms in brackets):
  step [N]       [s]  forward N events (default 1); with a filter, N events it lets through
  back [N]       [b]  backward N events, likewise
  jump N         [j]  to the state after N events (0: the initial state)
  state [NODE]   [p]  the global state, or one node's variables (NODE: n1 or 1)
  diff [prev|live] [d] what changed since the previous step; on a liveness violation also
                      the difference from the nearest live run (one that reaches the property)
  events         [e]  the events enabled here (the path's marked) and the path around here
  filter node=nK | kind=message|timeout|crash|reboot|client | off   [f]
                      limit `events` and stepping to one node's events or one kind
  where          [w]  the current step, its event and the violation
  help           [h]  this list
  quit           [q]  leave";

/// Parse one line; `Ok(None)` for a blank line or a `#` comment.
pub fn parse(line: &str) -> Result<Option<Command>, String> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let mut words = line.split_whitespace();
    let verb = words.next().unwrap_or_default();
    let args: Vec<&str> = words.collect();
    let cmd = match verb {
        "step" | "s" => Command::Step(count(verb, &args)?),
        "back" | "b" => Command::Back(count(verb, &args)?),
        "jump" | "j" => match args.as_slice() {
            [n] => Command::Jump(number(n).ok_or_else(|| usage(verb, "N is a step number"))?),
            _ => return Err(usage(verb, "give the step to go to, e.g. `jump 12`")),
        },
        "state" | "p" => match args.as_slice() {
            [] => Command::State(None),
            [n] => Command::State(Some(node(n)?)),
            _ => return Err(usage(verb, "`state` or `state n1`")),
        },
        "diff" | "d" => match args.as_slice() {
            [] => Command::Diff(DiffWhat::Both),
            ["prev"] => Command::Diff(DiffWhat::Previous),
            ["live"] => Command::Diff(DiffWhat::Live),
            _ => return Err(usage(verb, "`diff`, `diff prev` or `diff live`")),
        },
        "events" | "e" => none(verb, &args, Command::Events)?,
        "filter" | "f" => Command::Filter(filter(&args)?),
        "where" | "w" => none(verb, &args, Command::Where)?,
        "help" | "h" | "?" => Command::Help,
        "quit" | "q" | "exit" => none(verb, &args, Command::Quit)?,
        other => {
            return Err(format!(
                "unknown command `{other}`; try step, back, jump N, state, diff, events, filter, where, help, quit"
            ))
        }
    };
    Ok(Some(cmd))
}

fn usage(verb: &str, hint: &str) -> String {
    format!("`{verb}`: {hint}")
}

fn none(verb: &str, args: &[&str], cmd: Command) -> Result<Command, String> {
    match args {
        [] => Ok(cmd),
        _ => Err(usage(verb, "takes no arguments")),
    }
}

fn number(s: &str) -> Option<usize> {
    s.parse().ok()
}

fn count(verb: &str, args: &[&str]) -> Result<usize, String> {
    match args {
        [] => Ok(1),
        [n] => number(n)
            .filter(|&n| n > 0)
            .ok_or_else(|| usage(verb, "N is a positive number of events")),
        _ => Err(usage(verb, "at most one number")),
    }
}

/// `n1` or `1`.
pub fn node(s: &str) -> Result<NodeId, String> {
    s.strip_prefix('n')
        .unwrap_or(s)
        .parse()
        .map_err(|_| format!("`{s}` is not a node; nodes are written n0, n1, ..."))
}

fn filter(args: &[&str]) -> Result<FilterChange, String> {
    match args {
        [] => return Ok(FilterChange::Show),
        ["off"] => return Ok(FilterChange::Off),
        _ => {}
    }
    let (mut node_f, mut kind_f) = (None, None);
    for a in args {
        match a.split_once('=') {
            Some(("node", n)) => node_f = Some(node(n)?),
            Some(("kind", k)) => kind_f = Some(kind(k)?),
            _ => {
                return Err(usage(
                    "filter",
                    "`filter node=n1`, `filter kind=message|timeout|crash|reboot|client` or `filter off`",
                ))
            }
        }
    }
    Ok(FilterChange::Set {
        node: node_f,
        kind: kind_f,
    })
}

fn kind(s: &str) -> Result<EventKind, String> {
    Ok(match s {
        "message" => EventKind::Message,
        "timeout" | "timer" => EventKind::Timeout,
        "crash" => EventKind::Crash,
        "reboot" => EventKind::Reboot,
        "client" => EventKind::Client,
        _ => {
            return Err(format!(
                "`{s}` is not an event kind; kinds are message, timeout, crash, reboot, client"
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_with_their_short_forms_and_arguments() {
        assert_eq!(parse("step"), Ok(Some(Command::Step(1))));
        assert_eq!(parse(" s 3 "), Ok(Some(Command::Step(3))));
        assert_eq!(parse("j 12"), Ok(Some(Command::Jump(12))));
        assert_eq!(parse("state n2"), Ok(Some(Command::State(Some(2)))));
        assert_eq!(parse("# a comment"), Ok(None));
        assert_eq!(
            parse("filter node=n1 kind=timeout"),
            Ok(Some(Command::Filter(FilterChange::Set {
                node: Some(1),
                kind: Some(EventKind::Timeout)
            })))
        );
        assert!(parse("step 0").is_err());
        assert!(parse("jump").is_err());
        assert!(parse("filter colour=red").is_err());
        assert!(parse("frobnicate").unwrap_err().contains("unknown command"));
    }
}
