#!/usr/bin/env python3
"""check_layers.py — the package graph of Trident, and the check that every edge points down.

A package is a folder: src/<name>/ is <name>, kernels/ is kernels, viz/ is viz, and
src/main.c (the program) is main. Each package has a level; a file may include a header of
a package, and a BUILD target may depend on a target of a package, only when that package
is on a LOWER level. Edges inside a package are free; edges to the same level (sideways)
and to a higher level (upward) are errors: a package builds only on what is below it, so a
reader can learn the tree bottom-up and a lower package never needs a higher one to be tested
(docs/code.md states the rule for readers; this table is its one source). The levels, bottom to
top:

   0  core                                  checks, flags, files, clocks, rng
   1  kernels precision optim data trace    leaf libraries (no MPI, no devices)
   2  device                                where tensors live, which kernel runs
   3  runtime                               MPI, groups, communication
   4  tp cp moe                             f, g and the parallel layers; ring attention;
                                            mixture of experts
   5  model                                 the GPT and its buffers
   6  pp zero infer                         schedules + executor; the distributed optimizer;
                                           generation with a KV cache
   7  ckpt                                  checkpoints (take a layout, not the trainer)
   8  viz                                   pictures from trace files (no MPI)
   9  train analyze                         the trainer: runs a job, writes a run directory;
                                            a traced step explained (critical path, causes)
  10  plan                                  predicted step time of every layout (no MPI)
  11  bench                                 measurements built on the trainer
  12  cli                                   the subcommands
  13  main                                  src/main.c: dispatches to cli

Narrow edges: some packages may use only part of a lower one (NARROW below): runtime takes
device memory (src/device/device_memory.h, //src/device:memory), never the kernels, so
communication links no BLAS.

Both graphs are checked: `#include "..."` lines (written from the repository root) in every
.c/.h/.cu/.cuh file, and "//package:target" labels in every BUILD file of those packages.
The table is the complete list of packages, both ways: a folder of src/ (or kernels/, viz/) that
is not in it is an error (give a new package a level here), and so is a package in it with no
files to check (a folder removed or renamed, or its :layering_sources missing from
tests/arch/BUILD, so the test would not see it).

Usage:
  tools/check_layers.py [--root DIR]            exit 1 naming every forbidden edge
  tools/check_layers.py [--root DIR] --graph    print the package graph (edges, file counts)

In the test suite: //tests/arch:layers_test runs it on every package's :layering_sources.

Not here: the tests' own includes (tests/ may include anything) and link-time weight.
"""
import argparse
import os
import re
import sys

LEVELS = {
    "core": 0,
    "kernels": 1, "precision": 1, "optim": 1, "data": 1, "trace": 1,
    "device": 2,
    "runtime": 3,
    "tp": 4, "cp": 4, "moe": 4,
    "model": 5,
    "pp": 6, "zero": 6, "infer": 6,
    "ckpt": 7,
    "viz": 8,
    "train": 9, "analyze": 9,
    "plan": 10,
    "bench": 11,
    "cli": 12,
    "main": 13,
}

# (from, to) -> the only headers / BUILD labels of `to` that `from` may use.
NARROW = {
    ("runtime", "device"): ("src/device/device_memory.h", "//src/device:memory"),
}

SOURCE_EXT = (".c", ".h", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
LABEL = re.compile(r'"//([A-Za-z0-9_/.-]*)(?::[^"]*)?"')


def package_of(path):
    """Package of a repository-relative path, or None when it is outside src/, kernels/, viz/."""
    parts = path.split("/")
    if path == "src/main.c" or path == "BUILD":
        return "main"
    if parts[0] == "src" and len(parts) >= 3:
        return parts[1]
    if parts[0] in ("kernels", "viz") and len(parts) >= 2:
        return parts[0]
    return None


def source_dir(pkg):
    """The folder of a package, as a Bazel package path (main: the root)."""
    return {"main": "", "kernels": "kernels", "viz": "viz"}.get(pkg, "src/" + pkg)


def scanned_files(root):
    out = []
    for top in ("src", "kernels", "viz"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for n in sorted(names):
                if n.endswith(SOURCE_EXT) or n == "BUILD":
                    out.append(os.path.relpath(os.path.join(dirpath, n), root).replace(os.sep, "/"))
    if os.path.exists(os.path.join(root, "BUILD")):
        out.append("BUILD")
    return sorted(out)


def edges_of(root, path):
    """(line number, target path or label, target package) for every reference in a file."""
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    found = []
    if path.endswith("BUILD"):
        for i, line in enumerate(lines, 1):
            if line.lstrip().startswith("#"):
                continue
            for m in LABEL.finditer(line):
                pkg_path = m.group(1)
                pkg = "main" if pkg_path == "" else package_of(pkg_path + "/x")
                if pkg_path.startswith("tools") or pkg_path.startswith("tests"):
                    continue
                found.append((i, m.group(0).strip('"'), pkg))
    else:
        for i, line in enumerate(lines, 1):
            m = INCLUDE.match(line)
            if m and "/" in m.group(1):
                found.append((i, m.group(1), package_of(m.group(1))))
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--graph", action="store_true", help="print the package graph and exit 0")
    args = ap.parse_args()
    root = os.path.abspath(args.root)

    errors = []
    graph = {}  # (from, to) -> number of references
    nfiles = {}
    for path in scanned_files(root):
        src = package_of(path)
        nfiles[src] = nfiles.get(src, 0) + 1
        if src not in LEVELS:
            errors.append("%s: package '%s' has no level (add it to LEVELS in tools/check_layers.py)" % (path, src))
            continue
        for line, target, dst in edges_of(root, path):
            if dst is None or dst == src:
                continue
            graph[(src, dst)] = graph.get((src, dst), 0) + 1
            if dst not in LEVELS:
                errors.append("%s:%d: %s is in package '%s', which has no level" % (path, line, target, dst))
            elif LEVELS[dst] >= LEVELS[src]:
                kind = "sideways" if LEVELS[dst] == LEVELS[src] else "upward"
                errors.append("%s:%d: %s edge %s (level %d) -> %s (level %d): %s"
                              % (path, line, kind, src, LEVELS[src], dst, LEVELS[dst], target))
            elif (src, dst) in NARROW and target not in NARROW[(src, dst)]:
                errors.append("%s:%d: %s may use only %s of %s, not %s"
                              % (path, line, src, " and ".join(NARROW[(src, dst)]), dst, target))

    for pkg in sorted(set(LEVELS) - set(nfiles), key=lambda p: LEVELS[p]):
        errors.append("package '%s' (level %d) has no files here: remove it from LEVELS, or add "
                      "//%s:layering_sources to tests/arch/BUILD" % (pkg, LEVELS[pkg], source_dir(pkg)))

    if args.graph:
        print("# package graph of src/, kernels/, viz/ (includes + BUILD deps); level: package -> what it uses")
        for pkg in sorted(nfiles, key=lambda p: (LEVELS.get(p, 99), p)):
            outs = sorted({d for (s, d) in graph if s == pkg}, key=lambda p: (-LEVELS.get(p, 99), p))
            marks = ["%s%s" % (d, "" if LEVELS.get(d, 99) < LEVELS.get(pkg, -1) else " (UP!)") for d in outs]
            print("%2s  %-9s (%2d files) -> %s" % (LEVELS.get(pkg, "?"), pkg, nfiles[pkg], ", ".join(marks) or "-"))
        print("# %d forbidden edge(s)" % len(errors))
        return 0
    for e in errors:
        print(e)
    if errors:
        print("check_layers: %d forbidden edge(s): every include and BUILD dep must point to a lower level "
              "(levels: top comment of tools/check_layers.py)" % len(errors))
        return 1
    print("check_layers: %d files, every edge points down" % sum(nfiles.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
