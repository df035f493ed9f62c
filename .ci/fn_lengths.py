#!/usr/bin/env python3
"""Function lengths in lines, for the limits docs/ARCHITECTURE.md states: none over 150 in
server/ and hooks/, none over 200 anywhere (Rust, Java, Python sources of the repository).

A function's length runs from its `fn`/method/`def` line to its closing line, inclusive, so
a nested function counts in its parent too. Rust and Java bodies are found by matching braces
outside comments, strings and character literals; Python bodies by indentation.

    python3 .ci/fn_lengths.py            # the 15 longest, and the verdict (exit 1 over a limit)
    python3 .ci/fn_lengths.py --top 40
"""
import argparse
import re
import subprocess
import sys
from pathlib import Path

LIMITS = [("server/", 150), ("hooks/", 150), ("", 200)]
JAVA_NOT_METHODS = {"if", "for", "while", "switch", "catch", "synchronized", "try", "return", "new", "else"}


def code_mask(text: str, java: bool) -> str:
    """`text` with comments, strings and char literals blanked (newlines kept)."""
    out = list(text)
    i, n = 0, len(text)

    def blank(a: int, b: int) -> None:
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j) and not java:
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif not java and re.match(r'b?r(#*)"', text[i : i + 40]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'b?r(#*)"', text[i:])
            end = text.find('"' + m.group(1), i + m.end())
            j = n if end < 0 else end + 1 + len(m.group(1))
            blank(i, j)
            i = j
        elif java and text.startswith('"""', i):
            end = text.find('"""', i + 3)
            j = n if end < 0 else end + 3
            blank(i, j)
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            blank(i, j + 1)
            i = j + 1
        elif c == "'":
            # A char literal ('x', '\n', '\u{1F600}', '{'); in Rust otherwise a lifetime or label.
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.[^']*|[^\\'\n])'", text[i:])
            if m:
                blank(i, i + m.end())
                i += m.end()
            else:
                i += 1
        else:
            i += 1
    return "".join(out)


def brace_functions(text: str, java: bool):
    """(name, first line, length) of each function in a Rust or Java source."""
    code = code_mask(text, java)
    line_at = [0] * (len(code) + 1)
    line = 1
    for k, ch in enumerate(code):
        line_at[k] = line
        if ch == "\n":
            line += 1
    line_at[len(code)] = line
    starts = []  # (name, offset of the body's '{')
    if java:
        for m in re.finditer(r"\b([A-Za-z_]\w*)\s*\(", code):
            name = m.group(1)
            if name in JAVA_NOT_METHODS:
                continue
            before = code[: m.start()].rstrip()
            if before.endswith("new") or before.endswith("."):
                continue
            # The parameter list, then `throws ...`, then the body.
            depth, j = 0, m.end() - 1
            while j < len(code):
                if code[j] == "(":
                    depth += 1
                elif code[j] == ")":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            rest = re.match(r"\s*(throws\s+[\w.,\s<>]+?)?\s*\{", code[j + 1 :])
            prev = before.split()[-1] if before.split() else ""
            if rest and prev not in {"=", "->", "return", "(", ","} and not prev.endswith(("=", "(", ",")):
                starts.append((name, j + 1 + rest.end() - 1))
    else:
        for m in re.finditer(r"\bfn\s+([A-Za-z_]\w*)", code):
            depth, j = 0, m.end()
            while j < len(code):
                ch = code[j]
                if ch in "([<":
                    depth += 1
                elif ch in ")]>":
                    depth -= 1 if not (ch == ">" and code[j - 1] == "-") else 0
                elif ch == ";" and depth <= 0:
                    j = -1
                    break
                elif ch == "{" and depth <= 0:
                    break
                j += 1
            if j > 0 and j < len(code):
                starts.append((m.group(1), j))
    found = []
    for name, open_at in starts:
        depth, j = 0, open_at
        while j < len(code):
            if code[j] == "{":
                depth += 1
            elif code[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        # The line of the signature's start: back to the keyword's line.
        sig = code.rfind("\n", 0, code.rfind(name, 0, open_at)) + 1
        first = line_at[sig]
        found.append((name, first, line_at[min(j, len(code))] - first + 1))
    return found


def python_functions(text: str):
    lines = text.split("\n")
    found = []
    for k, l in enumerate(lines):
        m = re.match(r"(\s*)(async\s+)?def\s+(\w+)", l)
        if not m:
            continue
        indent, last = len(m.group(1)), k
        for j in range(k + 1, len(lines)):
            s = lines[j]
            if not s.strip() or s.lstrip().startswith("#"):
                continue
            if len(s) - len(s.lstrip()) <= indent and not s.lstrip().startswith((")", "]")):
                break
            last = j
        found.append((m.group(3), k + 1, last - k + 1))
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args()
    root = Path(__file__).resolve().parent.parent
    files = subprocess.run(["git", "ls-files", "*.rs", "*.java", "*.py"], cwd=root, capture_output=True, text=True, check=True).stdout.split()
    rows = []
    for f in files:
        text = (root / f).read_text(errors="replace")
        if f.endswith(".py"):
            fns = python_functions(text)
        else:
            fns = brace_functions(text, f.endswith(".java"))
        rows += [(length, f, first, name) for name, first, length in fns]
    rows.sort(reverse=True)
    for length, f, first, name in rows[: args.top]:
        print(f"{length:5}  {f}:{first}  {name}")
    over = []
    for length, f, first, name in rows:
        limit = next(lim for prefix, lim in LIMITS if f.startswith(prefix))
        if length > limit:
            over.append(f"{f}:{first} {name}: {length} lines (limit {limit})")
    print(f"{len(rows)} functions in {len(files)} files; {len(over)} over the limits")
    for o in over:
        print("  over: " + o)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
