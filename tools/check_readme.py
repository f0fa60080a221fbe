#!/usr/bin/env python3
"""check_readme.py — the front door stays true: README.md's reader's path names code that exists.

README.md is where every reader starts, and its reader's path sends them into the code: a
numbered list of stops under the heading "## The reader's path", each naming files (a backticked
path: `src/pp/schedule.c`) and functions (a backticked name with parentheses: `pp_rank_plan_build()`).
A function belongs to the file named last before it in the same stop. The check fails, naming the
stop, when

  - a named file does not exist, or a function is not defined in its file (a rename or a move
    that did not update the path; the definition is found as tools/check_bars.py finds it);
  - the path has fewer than MIN_STOPS or more than MAX_STOPS stops, or they are not numbered
    1, 2, 3, ... in order, or a stop names no file or no function;
  - README.md is over MAX_README_LINES lines (the front door holds the path; essays go to docs/);
  - a relative link of README.md or of docs/*.md names a file that does not exist.

Usage:
  tools/check_readme.py [--root DIR]           exit 1 naming every problem
  tools/check_readme.py [--root DIR] --path    print the reader's path as the check reads it

In the test suite: //tests/arch:readme_test.

Not here: whether a stop is well chosen (a reader judges that), and the tutorials' own links
(//tests/tutorials:tutorials_test checks those).
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_bars  # noqa: E402  (the one C function finder)

MAX_README_LINES = 150
MIN_STOPS, MAX_STOPS = 12, 16
HEADING = "## The reader's path"

SPAN = re.compile(r"`([^`]+)`")
FILE_SPAN = re.compile(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)+\.[A-Za-z]+$")
FUNC_SPAN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\(\)$")
STOP = re.compile(r"^(\d+)\.\s+(.*)$")
TITLE = re.compile(r"\*\*(.+?)\*\*")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def read_stops(lines):
    """[(number, title, text, line)] of the reader's path, or None without its heading."""
    try:
        start = next(i for i, l in enumerate(lines) if l.strip() == HEADING)
    except StopIteration:
        return None
    stops = []
    for i in range(start + 1, len(lines)):
        line = lines[i]
        if line.startswith("## "):
            break
        m = STOP.match(line)
        if m:
            t = TITLE.search(m.group(2))
            stops.append([int(m.group(1)), t.group(1).rstrip(".") if t else m.group(2)[:40],
                          m.group(2), i + 1])
        elif stops and line.startswith((" ", "\t")) and line.strip():
            stops[-1][2] += " " + line.strip()
        elif stops and not line.strip() and i + 1 < len(lines) and STOP.match(lines[i + 1]):
            continue
        elif stops and line.strip():
            break  # the list has ended
    return [tuple(s) for s in stops]


def stop_names(text):
    """[(file, [functions named after it])] in the order a stop names them; functions named
    before any file go under None."""
    out = [(None, [])]
    for span in SPAN.findall(text):
        span = span.strip()
        f = FUNC_SPAN.match(span)
        if f:
            out[-1][1].append(f.group(1))
        elif FILE_SPAN.match(span):
            out.append((span, []))
    return out if out[0][1] else out[1:]


def check_path(root, lines):
    errors, defined = [], {}
    stops = read_stops(lines)
    if stops is None:
        return ["README.md: no '%s' heading: the reader's path is missing" % HEADING], []
    if not MIN_STOPS <= len(stops) <= MAX_STOPS:
        errors.append("README.md: the reader's path has %d stops; it must have %d to %d"
                      % (len(stops), MIN_STOPS, MAX_STOPS))
    for k, (number, title, text, line) in enumerate(stops, 1):
        where = "README.md:%d: stop %d (%s)" % (line, number, title)
        if number != k:
            errors.append("%s: numbered %d, expected %d (stops are numbered 1, 2, 3, ...)"
                          % (where, number, k))
        names = stop_names(text)
        if not names or all(f is None for f, _ in names):
            errors.append("%s: names no file (a backticked path from the repository root)" % where)
        if not any(fns for _, fns in names):
            errors.append("%s: names no function (a backticked name(), to start at)" % where)
        for path, fns in names:
            if path is None:
                errors.append("%s: %s named before any file: name its file first"
                              % (where, ", ".join(f + "()" for f in fns)))
                continue
            full = os.path.join(root, path)
            if not os.path.isfile(full):
                errors.append("%s: %s does not exist" % (where, path))
                continue
            if not fns:
                continue
            if not path.endswith(check_bars.SOURCE_EXT):
                errors.append("%s: %s is not C or CUDA source, so it defines no %s()"
                              % (where, path, fns[0]))
                continue
            if path not in defined:
                defined[path] = {n for n, _, _ in check_bars.functions(check_bars.read(root, path))}
            for fn in fns:
                if fn not in defined[path]:
                    errors.append("%s: %s() is not defined in %s (renamed or moved? update the "
                                  "path)" % (where, fn, path))
    return errors, stops


def check_links(root, md_paths):
    errors = []
    for md in md_paths:
        with open(os.path.join(root, md), encoding="utf-8") as f:
            lines = f.read().split("\n")
        for i, line in enumerate(lines, 1):
            for target in LINK.findall(line):
                target = target.split("#", 1)[0]
                if not target or re.match(r"^[a-z]+:", target):
                    continue  # an anchor in the page, or http:, https:, mailto:
                resolved = os.path.normpath(os.path.join(os.path.dirname(md), target))
                if resolved.startswith("..") or not os.path.exists(os.path.join(root, resolved)):
                    errors.append("%s:%d: links %s, which does not exist" % (md, i, target))
    return errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--path", action="store_true", help="print the reader's path and exit")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
        text = f.read()
    lines = text.split("\n")
    if text.endswith("\n"):
        lines = lines[:-1]
    errors, stops = check_path(root, lines)
    if args.path:
        for number, title, text_, _ in stops:
            print("%2d. %s" % (number, title))
            for path, fns in stop_names(text_):
                print("      %s: %s" % (path, ", ".join(fns) or "-"))
        return 0
    if len(lines) > MAX_README_LINES:
        errors.append("README.md: %d lines, over the bar of %d (move essays to docs/)"
                      % (len(lines), MAX_README_LINES))
    docs = sorted("docs/" + n for n in os.listdir(os.path.join(root, "docs")) if n.endswith(".md")) \
        if os.path.isdir(os.path.join(root, "docs")) else []
    errors += check_links(root, ["README.md"] + docs)
    for e in errors:
        print(e)
    if errors:
        print("check_readme: %d problem(s) with the front door" % len(errors))
        return 1
    nfuncs = sum(len(fns) for _, _, t, _ in stops for _, fns in stop_names(t))
    print("check_readme: README.md %d lines; the reader's path: %d stops, %d functions, all "
          "defined where named; links of README.md and %d docs pages resolve"
          % (len(lines), len(stops), nfuncs, len(docs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
