//! A variant's patch as data: a unified diff parsed and applied here, in memory, instead of by
//! `patch(1)`, which follows the names in the file wherever they lead (and runs `ed` scripts).
//! Every file name is checked before anything is read: relative, no `..`, under the server's
//! Java tree; the files are read from the source tree and the patched texts returned, so a
//! patch that does not apply leaves every file as it was.

use std::collections::BTreeMap;
use std::path::{Component, Path};

/// One file's changes: its path relative to the source root (`patch -p1`), and its hunks.
#[derive(Debug, PartialEq, Eq)]
pub struct FilePatch {
    pub path: String,
    /// `--- /dev/null`: the file is new.
    pub creates: bool,
    hunks: Vec<Hunk>,
}

/// `@@ -old_start,... +... @@` and its lines, each with its line end (none when the diff
/// says `\ No newline at end of file`).
#[derive(Debug, PartialEq, Eq)]
struct Hunk {
    old_start: usize,
    /// The patch's line number of the `@@` line, for messages.
    at: usize,
    old: Vec<String>,
    new: Vec<String>,
}

/// What a patch file may not do, or where it does not fit the source.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PatchError(pub String);

fn bad<T>(m: String) -> Result<T, PatchError> {
    Err(PatchError(m))
}

/// A name from a `---`/`+++` line, `-p1` stripped: relative, only plain components (no `..`,
/// `.`, empty or absolute ones), at least one left after the stripped prefix.
fn stripped(name: &str, line: usize) -> Result<String, PatchError> {
    let refuse = |why: &str| bad(format!("line {line}: file name `{name}` {why}"));
    if name.starts_with('"') {
        return refuse("is quoted: give plain paths (letters, digits, `/`, `.`, `-`, `_`)");
    }
    if name.starts_with('/') {
        return refuse(
            "is absolute: give paths as in ZooKeeper's repository, `a/` and `b/` prefixed",
        );
    }
    let parts: Vec<&str> = name.split('/').collect();
    let plain = parts.iter().all(|p| {
        matches!(
            Path::new(p).components().collect::<Vec<_>>()[..],
            [Component::Normal(_)]
        ) && *p != "."
    });
    if !plain {
        return refuse("has `..`, `.` or empty components: give paths inside the source tree");
    }
    if parts.len() < 2 {
        return refuse("has no `a/` or `b/` prefix");
    }
    Ok(parts[1..].join("/"))
}

/// The name on a `---`/`+++` line: up to a tab (a timestamp may follow), trimmed.
fn header_name(rest: &str) -> &str {
    rest.split('\t').next().unwrap_or(rest).trim()
}

/// `@@ -a[,b] +c[,d] @@`: `(a, b, d)`.
fn hunk_header(line: &str) -> Option<(usize, usize, usize)> {
    let body = line.strip_prefix("@@ -")?;
    let (ranges, _) = body.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let range = |r: &str| -> Option<(usize, usize)> {
        match r.split_once(',') {
            Some((s, n)) => Some((s.parse().ok()?, n.parse().ok()?)),
            None => Some((r.parse().ok()?, 1)),
        }
    };
    let (a, b) = range(old)?;
    let (_, d) = range(new)?;
    Some((a, b, d))
}

/// Parse a unified diff. Text outside files (a description, `diff --git` and `index` lines)
/// is skipped, as `patch` skips it; what would rename, copy, delete or binary-patch a file is
/// refused.
pub fn parse(diff: &str) -> Result<Vec<FilePatch>, PatchError> {
    let lines: Vec<&str> = diff.split_inclusive('\n').collect();
    let mut files: Vec<FilePatch> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let n = i + 1;
        let line = lines[i].trim_end_matches(['\n', '\r']);
        for refused in [
            "rename from ",
            "rename to ",
            "copy from ",
            "copy to ",
            "deleted file mode",
            "GIT binary patch",
            "Binary files ",
        ] {
            if line.starts_with(refused) {
                return bad(format!(
                    "line {n}: `{line}`: a variant's patch changes the text of Java files; it cannot rename, copy, delete or binary-patch them"
                ));
            }
        }
        if let Some(rest) = line.strip_prefix("--- ") {
            let Some(plus) = lines.get(i + 1).and_then(|l| l.strip_prefix("+++ ")) else {
                i += 1;
                continue;
            };
            let old = header_name(rest);
            let new = header_name(plus.trim_end_matches(['\n', '\r']));
            if new == "/dev/null" {
                return bad(format!(
                    "line {}: the patch deletes {old}: a variant can change or add Java files, not delete them",
                    n + 1
                ));
            }
            let creates = old == "/dev/null";
            let old = if creates {
                None
            } else {
                Some(stripped(old, n)?)
            };
            let path = stripped(new, n + 1)?;
            if old.is_some_and(|o| o != path) {
                return bad(format!(
                    "line {n}: `---` and `+++` name different files: a variant's patch changes files in place"
                ));
            }
            files.push(FilePatch {
                path,
                creates,
                hunks: Vec::new(),
            });
            i += 2;
            continue;
        }
        if line.starts_with("@@ ") {
            let Some(file) = files.last_mut() else {
                return bad(format!(
                    "line {n}: a hunk before any `--- a/FILE` and `+++ b/FILE` lines"
                ));
            };
            let (old_start, mut old_left, mut new_left) = hunk_header(line)
                .ok_or_else(|| PatchError(format!("line {n}: malformed hunk header `{line}`")))?;
            let mut hunk = Hunk {
                old_start,
                at: n,
                old: Vec::new(),
                new: Vec::new(),
            };
            i += 1;
            while old_left > 0 || new_left > 0 {
                let Some(l) = lines.get(i) else {
                    return bad(format!(
                        "line {n}: the hunk ends before its last line (the patch is cut short)"
                    ));
                };
                // A blank line is an empty context line whose space an editor dropped.
                let (kind, text) = match l.chars().next() {
                    Some('\n') => (' ', "\n".to_string()),
                    Some(c @ (' ' | '-' | '+')) => (c, l[1..].to_string()),
                    _ => {
                        return bad(format!(
                            "line {}: malformed hunk line (the hunk at line {n} needs {old_left} more old and {new_left} more new lines)",
                            i + 1
                        ))
                    }
                };
                let (to_old, to_new) = match kind {
                    ' ' => (true, true),
                    '-' => (true, false),
                    _ => (false, true),
                };
                if (to_old && old_left == 0) || (to_new && new_left == 0) {
                    return bad(format!(
                        "line {}: the hunk at line {n} has more lines than its header says",
                        i + 1
                    ));
                }
                if to_old {
                    hunk.old.push(text.clone());
                    old_left -= 1;
                }
                if to_new {
                    hunk.new.push(text);
                    new_left -= 1;
                }
                i += 1;
                // `\ No newline at end of file`: the line before has no line end.
                if lines.get(i).is_some_and(|l| l.starts_with('\\')) {
                    for side in [
                        to_old.then_some(&mut hunk.old),
                        to_new.then_some(&mut hunk.new),
                    ]
                    .into_iter()
                    .flatten()
                    {
                        if let Some(last) = side.last_mut() {
                            last.truncate(last.trim_end_matches(['\n', '\r']).len());
                        }
                    }
                    i += 1;
                }
            }
            file.hunks.push(hunk);
            continue;
        }
        i += 1;
    }
    if files.is_empty() {
        return bad(
            "it has no `--- a/FILE` and `+++ b/FILE` lines (make it with `git diff` or `diff -u`)"
                .into(),
        );
    }
    if let Some(f) = files.iter().find(|f| f.hunks.is_empty()) {
        return bad(format!("it has no hunks (`@@ ... @@`) for {}", f.path));
    }
    Ok(files)
}

/// Apply `hunks` to `text`: each hunk's old lines where its header says, or the nearest place
/// after the previous hunk where they are (as `patch` does with an offset; no fuzz).
fn apply_hunks(path: &str, text: &str, hunks: &[Hunk]) -> Result<String, PatchError> {
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_string).collect();
    let mut from = 0; // where the next hunk may start, in `lines`
    let mut offset: isize = 0; // lines added minus removed so far
    for (k, h) in hunks.iter().enumerate() {
        // An empty old side (a new file's hunk) starts after line `old_start`, not at it.
        let wanted = if h.old.is_empty() {
            h.old_start
        } else {
            h.old_start.saturating_sub(1)
        };
        let wanted = wanted.saturating_add_signed(offset).max(from);
        let fits =
            |at: usize| at + h.old.len() <= lines.len() && lines[at..at + h.old.len()] == h.old[..];
        let last = lines.len().saturating_sub(h.old.len());
        let found = (0..=last.max(wanted))
            .flat_map(|d| {
                [
                    wanted.checked_add(d),
                    wanted.checked_sub(d).filter(|_| d > 0),
                ]
            })
            .flatten()
            .filter(|&at| at >= from && at <= last)
            .find(|&at| fits(at));
        let Some(at) = found else {
            return bad(format!(
                "hunk #{} (patch line {}, at line {} of {path}) does not match the file",
                k + 1,
                h.at,
                h.old_start
            ));
        };
        lines.splice(at..at + h.old.len(), h.new.iter().cloned());
        from = at + h.new.len();
        offset += h.new.len() as isize - h.old.len() as isize;
    }
    Ok(lines.concat())
}

/// Check that `path` (relative, plain components) stays under `root` once the folders on the
/// way are resolved, and is no symbolic link itself.
pub fn confined(root: &Path, path: &str) -> Result<(), PatchError> {
    let refuse = |why: String| bad(format!("{path}: {why}"));
    let root = root
        .canonicalize()
        .map_err(|e| PatchError(format!("{}: {e}", root.display())))?;
    let target = root.join(path);
    if std::fs::symlink_metadata(&target).is_ok_and(|m| !m.is_file()) {
        return refuse("is a symbolic link or not a regular file in the source tree".into());
    }
    // The nearest folder on the way that exists, resolved: it must be under the root.
    let mut dir = target.parent();
    while let Some(d) = dir {
        if let Ok(real) = d.canonicalize() {
            if !real.starts_with(&root) {
                return refuse(format!("leads out of the source tree {}", root.display()));
            }
            return Ok(());
        }
        dir = d.parent();
    }
    refuse(format!("leads out of the source tree {}", root.display()))
}

/// Apply `files` to the tree at `root`, reading each file it changes (at most `max` bytes) and
/// writing nothing: the patched texts by path, or why the patch does not fit.
pub fn apply(
    root: &Path,
    files: &[FilePatch],
    max: u64,
) -> Result<BTreeMap<String, String>, PatchError> {
    let mut texts: BTreeMap<String, String> = BTreeMap::new();
    for f in files {
        confined(root, &f.path)?;
        let text = match texts.get(&f.path) {
            Some(t) => t.clone(),
            None if f.creates => {
                if root.join(&f.path).exists() {
                    return bad(format!("{}: the patch creates it, but it exists", f.path));
                }
                String::new()
            }
            None => flymc_model::bounded::read_text(&root.join(&f.path), max)
                .map_err(|e| PatchError(format!("{}: {e}", f.path)))?,
        };
        let patched = apply_hunks(&f.path, &text, &f.hunks)?;
        texts.insert(f.path.clone(), patched);
    }
    Ok(texts)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str = "A description.\n\n--- a/src/A.java\n+++ b/src/A.java\n@@ -2,3 +2,3 @@\n two\n-three\n+THREE\n four\n";

    fn tree() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("root/src")).unwrap();
        std::fs::write(
            d.path().join("root/src/A.java"),
            "one\ntwo\nthree\nfour\nfive\n",
        )
        .unwrap();
        d
    }

    #[test]
    fn a_patch_applies_in_memory_with_an_offset() {
        let d = tree();
        let root = d.path().join("root");
        let files = parse(DIFF).unwrap();
        assert_eq!(files.len(), 1);
        let out = apply(&root, &files, 1 << 20).unwrap();
        assert_eq!(out["src/A.java"], "one\ntwo\nTHREE\nfour\nfive\n");
        // Two lines above where the header says: found by its offset.
        std::fs::write(root.join("src/A.java"), "x\ny\none\ntwo\nthree\nfour\n").unwrap();
        let out = apply(&root, &files, 1 << 20).unwrap();
        assert_eq!(out["src/A.java"], "x\ny\none\ntwo\nTHREE\nfour\n");
        // A new file, and one without a final line end.
        let new = "--- /dev/null\n+++ b/src/B.java\n@@ -0,0 +1,2 @@\n+class B {\n+}\n\\ No newline at end of file\n";
        let out = apply(&root, &parse(new).unwrap(), 1 << 20).unwrap();
        assert_eq!(out["src/B.java"], "class B {\n}");
    }

    #[test]
    fn a_hunk_that_does_not_match_names_itself_and_changes_nothing() {
        let d = tree();
        let root = d.path().join("root");
        let e = apply(
            &root,
            &parse(&DIFF.replace(" four", " FOUR")).unwrap(),
            1 << 20,
        )
        .unwrap_err();
        assert_eq!(
            e.0,
            "hunk #1 (patch line 5, at line 2 of src/A.java) does not match the file"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("src/A.java")).unwrap(),
            "one\ntwo\nthree\nfour\nfive\n"
        );
    }

    #[test]
    fn names_that_leave_the_tree_are_refused_before_anything_is_read() {
        for (name, says) in [
            (
                "b/src/../../victim.java",
                "has `..`, `.` or empty components",
            ),
            ("/etc/passwd", "is absolute"),
            ("b//etc/x.java", "has `..`, `.` or empty components"),
            ("b/./src/A.java", "has `..`, `.` or empty components"),
            ("\"b/src/A.java\"", "is quoted"),
            ("A.java", "has no `a/` or `b/` prefix"),
        ] {
            let text = DIFF.replace("+++ b/src/A.java", &format!("+++ {name}"));
            let e = parse(&text).unwrap_err();
            assert!(
                e.0.starts_with(&format!("line 4: file name `{name}` {says}")),
                "{e}"
            );
        }
        let e = parse(&DIFF.replace("--- a/src/A.java", "--- a/../A.java")).unwrap_err();
        assert!(
            e.0.starts_with("line 3: file name `a/../A.java` has `..`"),
            "{e}"
        );
        let e = parse(&DIFF.replace("--- a/src/A.java", "--- a/src/B.java")).unwrap_err();
        assert!(e.0.contains("name different files"), "{e}");
        for git in [
            "rename from src/A.java",
            "deleted file mode 100644",
            "GIT binary patch",
        ] {
            let e = parse(&format!("{git}\n{DIFF}")).unwrap_err();
            assert!(e.0.starts_with(&format!("line 1: `{git}`")), "{e}");
        }
    }

    #[test]
    fn a_symbolic_link_out_of_the_tree_is_refused() {
        let d = tree();
        let root = d.path().join("root");
        std::fs::create_dir(d.path().join("outside")).unwrap();
        std::fs::write(d.path().join("outside/A.java"), "one\ntwo\nthree\nfour\n").unwrap();
        std::os::unix::fs::symlink(d.path().join("outside"), root.join("out")).unwrap();
        let files = parse(&DIFF.replace("src/A.java", "out/A.java")).unwrap();
        let e = apply(&root, &files, 1 << 20).unwrap_err();
        assert!(
            e.0.starts_with("out/A.java: leads out of the source tree"),
            "{e}"
        );
        std::os::unix::fs::symlink(d.path().join("outside/A.java"), root.join("src/L.java"))
            .unwrap();
        let files = parse(&DIFF.replace("src/A.java", "src/L.java")).unwrap();
        let e = apply(&root, &files, 1 << 20).unwrap_err();
        assert!(e.0.contains("is a symbolic link"), "{e}");
    }

    #[test]
    fn malformed_hunks_are_refused() {
        let cut = DIFF.trim_end_matches(" four\n");
        assert!(parse(cut)
            .unwrap_err()
            .0
            .contains("ends before its last line"));
        let bad = DIFF.replace("@@ -2,3 +2,3 @@", "@@ -2,x +2,3 @@");
        assert!(parse(&bad).unwrap_err().0.contains("malformed hunk header"));
        assert!(parse("no diff here\n")
            .unwrap_err()
            .0
            .contains("no `--- a/FILE`"));
    }
}
