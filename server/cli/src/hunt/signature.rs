//! What makes two violating paths one finding: the system, the property, and the words of the
//! violation's message with numbers left out, as a bag ("n1 applied x but n0 applied y" and
//! "n0 applied y but n1 applied x" are one). Two orders that end in the same broken invariant
//! the same way are the same bug; the terms, ballots and node numbers they reached are not.
//!
//! A liveness finding is judged on the state a run ended in, which its message describes: its
//! identity is the system, the property and the workload (a real ZooKeeper hunt filed one
//! election that never settles ten times by message).
//!
//! The signature also carries the abstract events just before the violation (kind and name,
//! without nodes or payload), to show, but they are not part of its identity: the last event
//! is often one that merely happened to run concurrently (a `cass-5` hunt filed one replica
//! divergence three times, after a propose response, a commit response and a reboot).

use flymc_core::pathfile::PathFile;
use flymc_model::{stable_hash, PropertyKind};

use super::report::Signature;

/// Events up to a safety violation shown with it (a liveness violation is judged at the end
/// of a run, after a fair continuation, so the events there say nothing of the bug).
pub const EVENTS: usize = 3;

pub fn of(path: &PathFile) -> Option<Signature> {
    let v = path.violation.as_ref()?;
    Some(match v.kind {
        // Judged on the state a run ended in, after a fair continuation: the message describes
        // that state and the last events are the continuation's, so neither names the bug.
        PropertyKind::Liveness => Signature {
            system: path.system.clone(),
            property: v.property.clone(),
            events: Vec::new(),
            message: String::new(),
            workload: Some(path.workload.name.clone()),
        },
        PropertyKind::Safety => {
            let end = (v.step + 1).min(path.events.len());
            Signature {
                system: path.system.clone(),
                property: v.property.clone(),
                events: path.events[end.saturating_sub(EVENTS)..end]
                    .iter()
                    .map(|e| abstract_event(&e.description))
                    .collect(),
                message: bag_of_words(&v.message),
                workload: None,
            }
        }
    })
}

/// The finding's name: 16 hex digits of the signature's identity (not its events).
pub fn id(s: &Signature) -> String {
    let text = format!(
        "{}\u{0}{}\u{0}{}\u{0}{}",
        s.system,
        s.property,
        s.message,
        s.workload.as_deref().unwrap_or("")
    );
    format!("{:016x}", stable_hash(text.as_bytes()))
}

/// An event's description up to its first node or payload: `append_entries`, `crash`,
/// `timeout election`, `client put`.
pub fn abstract_event(description: &str) -> String {
    description
        .split_whitespace()
        .take_while(|w| {
            let node =
                |w: &str| w.starts_with('n') && w[1..].starts_with(|c: char| c.is_ascii_digit());
            !(node(w) || w.starts_with("->") || w.starts_with('@') || w.starts_with('{'))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The message's words, numbers abstracted, sorted.
pub fn bag_of_words(message: &str) -> String {
    let text = abstract_text(message);
    let mut words: Vec<&str> = text.split_whitespace().collect();
    words.sort_unstable();
    words.join(" ")
}

/// `text` with every run of digits replaced by `#` (node numbers, terms, ballots, indices).
pub fn abstract_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_number = false;
    for c in text.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push('#');
            }
            in_number = true;
        } else {
            in_number = false;
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_do_not_tell_findings_apart() {
        assert_eq!(
            abstract_text("deliver append_entries n0->n12 (term 3)"),
            "deliver append_entries n#->n# (term #)"
        );
        assert_eq!(
            bag_of_words("n0 applied 1@t1 at index 1 but n2 applied no-op@t2"),
            bag_of_words("n1 applied no-op@t2 at index 1 but n0 applied 1@t1")
        );
        assert_eq!(
            abstract_event("append_entries n0->n1 {\"term\":2}"),
            "append_entries"
        );
        assert_eq!(abstract_event("timeout election @n2"), "timeout election");
        assert_eq!(abstract_event("crash n0"), "crash");
        let a = Signature {
            system: "s".into(),
            property: "p".into(),
            events: vec!["crash n#".into()],
            message: "m".into(),
            workload: None,
        };
        let mut b = a.clone();
        b.events = vec!["reboot".into()];
        assert_eq!(id(&a), id(&b));
        b.property = "q".into();
        assert_ne!(id(&a), id(&b));
        assert_eq!(id(&a).len(), 16);
    }
}
