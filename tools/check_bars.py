#!/usr/bin/env python3
"""check_bars.py — the size bars of Trident's code: no file over 600 lines, no function over 80.

Trident is read one idea at a time, and the size of a file or a function is part of its message
(docs/code.md): a file a student can read in one sitting, a function that fits on a screen or two.
The bars, for every C and CUDA file (.c .h .cu .cuh) under src/, viz/ and kernels/:

  FILE_BAR      600 lines per file
  FUNCTION_BAR   80 lines per function, counted as a reader counts them: from the line where the
                 signature begins (its return type) to the line of the closing brace, both in

Two functions are allowed over the bar for good (EXEMPT below): the validators of the trace and
checkpoint readers, which follow their FORMAT.md line by line, so one reads beside the other.

A repository may carry a list of known offenders (--offenders FILE: "path" for a file, "path
function" for a function, '#' starts a comment) while they are being shrunk. Then the check fails
on an offender that is NOT listed, and on a listed one that is no longer over the bar (so the list
cannot rot: shrink a file, remove its line).

Usage:
  tools/check_bars.py [--root DIR] [--offenders FILE]   exit 1 naming every breach
  tools/check_bars.py [--root DIR] --report             every file and function over its bar
  tools/check_bars.py FILE.c --functions                every function of one file, with lengths

In the test suite: //tests/arch:bars_test runs it with tests/arch/bars_offenders.txt.

Not here: how long a line is (clang-format keeps 100 columns, //tests/arch:format_test), tests/
and tools/ (a test may be as long as its cases), and markdown (FORMAT.md files are specifications).
"""
import argparse
import os
import re
import sys

FILE_BAR = 600
FUNCTION_BAR = 80
TOPS = ("src", "viz", "kernels")
SOURCE_EXT = (".c", ".h", ".cu", ".cuh")

# (path, function): over the bar for good, each with its reason.
EXEMPT = {
    # follows src/trace/FORMAT.md field by field: a reader checks one against the other
    ("src/trace/trace_read.c", "parse"): "the trace format's validator",
    # follows src/ckpt/FORMAT.md field by field
    ("src/ckpt/tensorfile_validate.c", "tf_validate"): "the checkpoint format's validator",
}

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def blank_non_code(text):
    """The text with comments, string and character literals and preprocessor lines replaced by
    spaces (newlines kept, so offsets and line numbers still match the file)."""
    out = list(text)
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#":  # a preprocessor line, with its continuations
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out[i] = " "
                    i += 2
                    continue
                out[i] = " "
                i += 1
            continue
        if c == "\n":
            line_start = True
            i += 1
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        line_start = False
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                out[i] = " "
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            for k in range(i, end):
                if out[k] != "\n":
                    out[k] = " "
            i = end
        elif c in "\"'":
            k = i + 1
            while k < n and text[k] != c and text[k] != "\n":
                k += 2 if text[k] == "\\" else 1
            for j in range(i + 1, min(k, n)):
                out[j] = " "
            i = k + 1
        else:
            i += 1
    return "".join(out)


def function_name(head):
    """The name of the function whose definition head (text before its '{') is `head`, or None
    when the head is not a function's (a struct, an initializer, extern "C")."""
    h = head.rstrip()
    if not h.endswith(")"):
        return None
    depth = 0
    for k in range(len(h) - 1, -1, -1):  # the '(' of the parameter list
        if h[k] == ")":
            depth += 1
        elif h[k] == "(":
            depth -= 1
            if depth == 0:
                break
    else:
        return None
    before = h[:k].rstrip()
    m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)$", before)
    if not m or "=" in before:
        return None
    words = IDENT.findall(before)
    if not words or words[0] in ("struct", "union", "enum", "typedef", "return", "if", "for",
                                 "while", "switch", "do", "else", "sizeof"):
        return None
    if len(words) < 2:  # a call or a macro at file scope, not a definition
        return None
    return m.group(1)


def functions(text):
    """[(name, first line, last line)] of every function defined in C or CUDA source `text`:
    first is the line where its signature begins, last the line of its closing brace. Inside
    `extern "C" { }` and a namespace counts as file scope."""
    code = blank_non_code(text)
    found = []
    stack = []  # one entry per open brace: 'extern' (transparent), or (name, first line)
    stmt = None  # offset of the first code character of the current file-scope statement
    line = 1
    depth = 0  # non-transparent braces open
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
            continue
        if depth == 0 and stmt is None and not c.isspace():
            stmt = i
        if c == "{":
            if depth == 0:
                head = code[stmt:i] if stmt is not None else ""
                words = head.split()
                if words == ["extern"] or words[:1] == ["namespace"]:  # extern "C" { } or a
                    stack.append("extern")  # namespace: what is inside is at file scope
                    stmt = None
                    continue
                name = function_name(head)
                first = code.count("\n", 0, stmt) + 1 if stmt is not None else line
                stack.append((name, first))
            else:
                stack.append(None)
            depth += 1
        elif c == "}":
            if not stack:
                continue
            top = stack.pop()
            if top == "extern":
                stmt = None
                continue
            depth -= 1
            if depth == 0:
                if top and top[0]:
                    found.append((top[0], top[1], line))
                stmt = None
        elif c == ";" and depth == 0:
            stmt = None
    return found


def source_files(root):
    out = []
    for top in TOPS:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for n in names:
                if n.endswith(SOURCE_EXT):
                    out.append(os.path.relpath(os.path.join(dirpath, n), root).replace(os.sep, "/"))
    return sorted(out)


def read(root, path):
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        return f.read()


def measure(root):
    """({path: lines} over FILE_BAR, {(path, function): lines} over FUNCTION_BAR and not EXEMPT),
    the number of files and functions measured, and the EXEMPT functions that were not found."""
    files, funcs, nfiles, nfuncs = {}, {}, 0, 0
    exempt_seen = set()
    for path in source_files(root):
        text = read(root, path)
        nfiles += 1
        nlines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        if nlines > FILE_BAR:
            files[path] = nlines
        for name, first, last in functions(text):
            nfuncs += 1
            length = last - first + 1
            if (path, name) in EXEMPT:
                exempt_seen.add((path, name))
            elif length > FUNCTION_BAR:
                funcs[(path, name)] = length
    return files, funcs, nfiles, nfuncs, set(EXEMPT) - exempt_seen


def read_offenders(path):
    """The listed offenders: {path} and {(path, function)}, with the line each is listed on."""
    files, funcs = {}, {}
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            words = raw.split("#", 1)[0].split()
            if len(words) == 1:
                files[words[0]] = number
            elif len(words) == 2:
                funcs[(words[0], words[1])] = number
            elif words:
                raise SystemExit("%s:%d: expected 'path' or 'path function'" % (path, number))
    return files, funcs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--offenders", help="the known offenders, one a line")
    ap.add_argument("--report", action="store_true", help="list everything over a bar, exit 0")
    ap.add_argument("--functions", metavar="FILE", help="every function of FILE with its length")
    args = ap.parse_args()
    if args.functions:
        with open(args.functions, encoding="utf-8", errors="replace") as f:
            for name, first, last in functions(f.read()):
                print("%4d  %s (lines %d-%d)" % (last - first + 1, name, first, last))
        return 0
    root = os.path.abspath(args.root)
    files, funcs, nfiles, nfuncs, missing = measure(root)
    if args.report:
        for path, n in sorted(files.items(), key=lambda x: -x[1]):
            print("%5d lines  %s" % (n, path))
        for (path, name), n in sorted(funcs.items(), key=lambda x: -x[1]):
            print("%5d lines  %s %s" % (n, path, name))
        return 0

    listed_files, listed_funcs = read_offenders(args.offenders) if args.offenders else ({}, {})
    errors = []
    for path, name in sorted(missing):
        errors.append("%s: %s, exempt from the bar as %s, is not defined there: move or rename its "
                      "line in EXEMPT (tools/check_bars.py)" % (path, name, EXEMPT[(path, name)]))
    for path, n in sorted(files.items()):
        if path not in listed_files:
            errors.append("%s: %d lines, over the bar of %d (split it by idea)" % (path, n, FILE_BAR))
    for (path, name), n in sorted(funcs.items()):
        if (path, name) not in listed_funcs:
            errors.append("%s: %s is %d lines, over the bar of %d (from its signature to its "
                          "closing brace)" % (path, name, n, FUNCTION_BAR))
    for path, number in sorted(listed_files.items()):
        if path not in files:
            errors.append("%s:%d: %s is listed but no longer over %d lines: remove its line"
                          % (args.offenders, number, path, FILE_BAR))
    for (path, name), number in sorted(listed_funcs.items()):
        if (path, name) not in funcs:
            errors.append("%s:%d: %s %s is listed but no longer over %d lines (or gone): remove "
                          "its line" % (args.offenders, number, path, name, FUNCTION_BAR))
    for e in errors:
        print(e)
    if errors:
        print("check_bars: %d breach(es) of the bars (files <= %d lines, functions <= %d)"
              % (len(errors), FILE_BAR, FUNCTION_BAR))
        return 1
    print("check_bars: %d files, %d functions; over the bars: %d files and %d functions, all listed"
          % (nfiles, nfuncs, len(files), len(funcs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
