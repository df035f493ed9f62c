//! HTML pieces the show page and the hunt report share: escaping, and a table of every node's
//! variables in one state.

use std::collections::BTreeSet;
use std::fmt::Write;

use flymc_model::GlobalState;

use super::diagram::value_text;

/// `s` safe as HTML or SVG text and as a quoted attribute value, control characters escaped.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    // Control characters (from nodes and path files) first: XML forbids most of them.
    for c in flymc_model::escape::markup(s).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Longest value shown in a state table's cell.
const CELL_LIMIT: usize = 300;

/// A `<table class="flymc-state">`: a row per variable, a column per node, cells that differ
/// between nodes marked `diff`, down nodes' headers marked `down`.
pub fn state_table(state: &GlobalState) -> String {
    let mut s = String::from(r#"<table class="flymc-state"><thead><tr><th>variable</th>"#);
    for (i, n) in state.nodes.iter().enumerate() {
        let (class, note) = if n.alive {
            ("", "")
        } else {
            (r#" class="down""#, " (down)")
        };
        let _ = write!(s, "<th{class}>n{i}{note}</th>");
    }
    s.push_str("</tr></thead><tbody>");
    let names: BTreeSet<&String> = state.nodes.iter().flat_map(|n| n.vars.keys()).collect();
    for name in names {
        let values: Vec<Option<&serde_json::Value>> =
            state.nodes.iter().map(|n| n.vars.get(name)).collect();
        let differ = values.windows(2).any(|w| w[0] != w[1]);
        let class = if differ { r#" class="diff""# } else { "" };
        let _ = write!(s, "<tr{class}><th>{}</th>", escape(name));
        for v in values {
            let text = v.map_or(String::new(), |v| value_text(v, CELL_LIMIT));
            let _ = write!(s, "<td>{}</td>", escape(&text));
        }
        s.push_str("</tr>");
    }
    if !state.env.is_null() {
        let _ = write!(
            s,
            r#"<tr><th>env</th><td colspan="{}">{}</td></tr>"#,
            state.nodes.len().max(1),
            escape(&value_text(&state.env, CELL_LIMIT))
        );
    }
    s.push_str("</tbody></table>");
    s
}

/// The CSS of [`state_table`], for a page's `<style>`.
pub const STATE_TABLE_CSS: &str = "table.flymc-state{border-collapse:collapse;font:12px monospace}\
table.flymc-state th,table.flymc-state td{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top;max-width:40em;overflow-wrap:anywhere}\
table.flymc-state thead th{background:#eee}\
table.flymc-state th.down{background:#fcc}\
table.flymc-state tr.diff td{background:#fff6d5}";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            escape(r#"<a href="x">&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;"
        );
    }
}
