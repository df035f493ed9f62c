//! Call summaries: a `[[call]]`'s `means` over its parameters and the node's state.

use super::Summary;

/// The name `means` uses for the receiving node's state (`n.last_log_term`), unless a
/// parameter has that name.
pub const NODE_SCOPE: &str = "n";

/// A summary's `means` over its parameters and the node's state: `n` is parsed as one more
/// parameter, after the real ones (`Summary::node_vars` reads it back).
pub(super) fn parse_means(
    means: &str,
    params: &[String],
) -> Result<flymc_model::guard::Expr, flymc_model::guard::ParseError> {
    let mut all = params.to_vec();
    if !all.iter().any(|p| p == NODE_SCOPE) {
        all.push(NODE_SCOPE.to_string());
    }
    flymc_model::guard::parse_summary(means, &all)
}

impl Summary {
    /// Does parameter `k` of the body stand for the node (`n.x`)?
    pub fn is_node(&self, k: usize) -> bool {
        k == self.params.len()
    }

    /// The node variables the body reads (`n.x`: `x`).
    pub fn node_vars(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut todo = vec![&self.body];
        while let Some(e) = todo.pop() {
            if let flymc_model::guard::Expr::Var {
                scope: flymc_model::guard::Scope::Param(k),
                path,
            } = e
            {
                if self.is_node(*k) {
                    out.extend(path.first().cloned());
                }
            }
            todo.extend(e.children());
        }
        out
    }
}

/// `Commit.isAfter(a, b)` -> (`Commit.isAfter`, the parameters `a`, `b`); no parentheses:
/// no parameters.
pub(super) fn split_params(call: &str) -> (String, Option<Vec<String>>) {
    match call
        .trim()
        .strip_suffix(')')
        .and_then(|c| c.split_once('('))
    {
        Some((pat, params)) => (
            pat.trim().to_string(),
            Some(
                params
                    .split(',')
                    .map(|p| p.trim().to_string())
                    .filter(|p| !p.is_empty())
                    .collect(),
            ),
        ),
        None => (call.trim().to_string(), None),
    }
}
