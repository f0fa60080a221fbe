#!/usr/bin/env bash
# layers_test.sh — every include and BUILD dependency of src/, kernels/ and viz/ points down
# the package levels of tools/check_layers.py (which names every edge that does not).
#
# First a check of the checker: a tiny tree with an upward and a sideways edge must fail and
# name both, and name a package of the table that has no files there. Then the real tree (the packages' :layering_sources, laid out in the runfiles).
set -euo pipefail
cd "${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-trident}"
check=tools/check_layers.py

bad="${TEST_TMPDIR:-$(mktemp -d)}/bad"
mkdir -p "$bad/src/core" "$bad/src/pp" "$bad/src/zero"
printf '#include "src/pp/schedule.h"\n' > "$bad/src/core/check.h"
printf '#include "src/zero/shard_ranges.h"\n' > "$bad/src/pp/schedule.h"
printf '\n' > "$bad/src/zero/shard_ranges.h"
if out=$(python3 "$check" --root "$bad"); then
    echo "FAIL: check_layers.py accepted a tree with an upward edge:"; echo "$out"; exit 1
fi
grep -q "src/core/check.h:1: upward edge core" <<<"$out" || { echo "FAIL: upward edge not named:"; echo "$out"; exit 1; }
grep -q "src/pp/schedule.h:1: sideways edge pp" <<<"$out" || { echo "FAIL: sideways edge not named:"; echo "$out"; exit 1; }
# ...and the package list is complete both ways: a package with a level but no files is named.
grep -q "package 'infer' (level 6) has no files here" <<<"$out" || { echo "FAIL: a package the check cannot see not named:"; echo "$out"; exit 1; }

for d in src kernels viz; do
    [ -d "$d" ] || { echo "FAIL: $d/ is not in the runfiles (a package without :layering_sources?)"; exit 1; }
done
python3 "$check"  --root . --graph
python3 "$check" --root .
