//! Text flymc did not write (node exception messages and log lines, event descriptions,
//! messages and descriptions read from files) made safe to print: control characters become
//! visible escapes, so they cannot retitle a terminal, clear it, move its cursor or end an XML
//! document's well-formedness; and a line that would start with `::` (a GitHub Actions
//! workflow command) has its first colon escaped, so a CI log shows it rather than obeys it.

use std::borrow::Cow;

/// `s` as one line: every control character escaped, newlines too (`\n`).
pub fn line(s: &str) -> Cow<'_, str> {
    escape(s, false)
}

/// `s` as lines: newlines kept, every other control character escaped, and each line's
/// leading `::` neutralised.
pub fn lines(s: &str) -> Cow<'_, str> {
    escape(s, true)
}

/// `s` for XML or HTML text: newlines and tabs kept, every other control character escaped
/// (XML 1.0 forbids most of them; a document holding one is not well-formed).
pub fn markup(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| unsafe_char(c) && c != '\n' && c != '\t') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' | '\t' => out.push(c),
            c => push(&mut out, c),
        }
    }
    Cow::Owned(out)
}

/// `c` onto `out`, as an escape when it is unsafe.
fn push(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x80 && unsafe_char(c) => {
            out.push_str(&format!("\\x{:02x}", c as u32));
        }
        c if unsafe_char(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        c => out.push(c),
    }
}

/// Whether `c` must not reach a terminal, log or XML file as it is: C0 controls, DEL, C1
/// controls, and the two noncharacters XML 1.0 forbids.
fn unsafe_char(c: char) -> bool {
    c.is_control() || c == '\u{fffe}' || c == '\u{ffff}'
}

/// Whether `line` would be read as a workflow command (the runner ignores leading spaces).
fn command_like(line: &str) -> bool {
    line.trim_start().starts_with("::")
}

fn escape(s: &str, keep_newlines: bool) -> Cow<'_, str> {
    let clean = !s.chars().any(unsafe_char);
    if clean
        && !(if keep_newlines {
            s.split('\n').any(command_like)
        } else {
            command_like(s)
        })
    {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut line_start = true;
    for (i, c) in s.char_indices() {
        if line_start && command_like(&s[i..]) && c == ':' {
            out.push_str("\\x3a");
            line_start = false;
            continue;
        }
        match c {
            '\n' if keep_newlines => {
                out.push('\n');
                line_start = true;
                continue;
            }
            c => push(&mut out, c),
        }
        if !c.is_whitespace() {
            line_start = false;
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_become_visible_escapes() {
        let osc = "title\u{1b}]0;pwned\u{7}done\u{1b}[2J\u{9b}31m\u{7f}";
        assert_eq!(
            line(osc),
            "title\\x1b]0;pwned\\x07done\\x1b[2J\\u{9b}31m\\x7f"
        );
        assert_eq!(line("a\nb\r\tc"), "a\\nb\\r\\tc");
        assert_eq!(lines("a\nb\u{1b}c"), "a\nb\\x1bc");
        assert_eq!(line("\u{fffe}"), "\\u{fffe}");
        assert!(matches!(line("plain, ünïcode → ok"), Cow::Borrowed(_)));
        assert_eq!(markup("a\n\tb\u{1b}\u{0}::x"), "a\n\tb\\x1b\\x00::x");
    }

    #[test]
    fn workflow_commands_are_neutralised_at_the_start_of_a_line() {
        assert_eq!(line("::error::boom"), "\\x3a:error::boom");
        assert_eq!(line("  ::warning::x"), "  \\x3a:warning::x");
        assert_eq!(
            lines("ok\n::set-output name=x::y"),
            "ok\n\\x3a:set-output name=x::y"
        );
        assert_eq!(line("a\n::error::x"), "a\\n::error::x");
        assert!(matches!(line("a::b"), Cow::Borrowed(_)));
    }
}
