#!/usr/bin/env bash
# bars_test.sh — no file of src/, kernels/ and viz/ over 600 lines, no function over 80 (from
# the line of its signature to its closing brace), except the two format validators
# (tools/check_bars.py) and the offenders listed, each with its length today, in
# tests/arch/bars_offenders.txt; a listed one that is no longer over its bar fails too.
#
# First a check of the checker on a tiny tree: a function of 80 lines passes and one of 81 (its
# signature on two lines) fails, named; a 601-line file fails; a stale line of the list fails.
set -euo pipefail
cd "${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-trident}"
check=tools/check_bars.py

tmp="${TEST_TMPDIR:-$(mktemp -d)}/bars"
mkdir -p "$tmp/src/core" "$tmp/src/trace" "$tmp/src/ckpt" "$tmp/viz"
body() { for _ in $(seq "$1"); do echo "    x += 1;"; done; }
{ # 80 lines: signature, 78 statements, brace
    echo "/* fine */"; echo "static int fine(int x) {"; body 77; echo "    return x;"; echo "}"
    # 81 lines: a signature on two lines, 78 statements, brace
    echo "int too_long(int x,"; echo "             int y) {"; body 78; echo "}"
} > "$tmp/src/core/long.c"
seq 601 | sed 's/.*/int v&;/' > "$tmp/viz/big.c"
printf 'static int parse(void) { return 0; }\n' > "$tmp/src/trace/trace_read.c"
printf 'int tf_validate(void) { return 0; }\n' > "$tmp/src/ckpt/tensorfile_validate.c"
printf '# a stale line\nsrc/core/long.c fine\n' > "$tmp/list.txt"
if out=$(python3 "$check" --root "$tmp" --offenders "$tmp/list.txt"); then
    echo "FAIL: check_bars.py accepted a tree over its bars:"; echo "$out"; exit 1
fi
for want in "src/core/long.c: too_long is 81 lines" "viz/big.c: 601 lines" \
    "list.txt:2: src/core/long.c fine is listed but no longer over"; do
    grep -qF "$want" <<<"$out" || { echo "FAIL: not named: $want"; echo "$out"; exit 1; }
done
if grep -q "fine is 80\|: fine is" <<<"$out"; then echo "FAIL: an 80-line function refused:"; echo "$out"; exit 1; fi

for d in src kernels viz; do
    [ -d "$d" ] || { echo "FAIL: $d/ is not in the runfiles (a package without :layering_sources?)"; exit 1; }
done
python3 "$check" --root . --offenders tests/arch/bars_offenders.txt
