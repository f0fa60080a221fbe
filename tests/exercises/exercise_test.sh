#!/bin/bash
# exercise_test.sh — CI for one exercise: run the test binary built with the untouched skeleton
# (its tests must fail, the first failure must be EXPECT, and the summary must say what that
# test checks), then the one built with Trident's own code (every test must pass).
#
#   exercise_test.sh N SKELETON_BIN SOLUTION_BIN CHECKS EXPECT
set -uo pipefail
n=$1 skeleton=$2 solution=$3 checks=$4 expect=$5
here=$(dirname "$0")
summarize=$here/summarize.sh
[ -f "$summarize" ] || summarize=tests/exercises/summarize.sh
log=${TEST_TMPDIR:-/tmp}/exercise_$n.log

"$skeleton" >"$log" 2>&1
rc=$?
summary=$(bash "$summarize" "$checks" "$log" "$rc")
src=$?
echo "--- exercise $n, skeleton (exit status $rc):"
echo "$summary"
if [ "$rc" = 0 ] || [ "$src" = 0 ]; then
    echo "exercise $n: the skeleton's tests pass; they must fail until the student writes the code"
    cat "$log"
    exit 1
fi
first=$(echo "$summary" | grep -m1 '^  FAILED ' | awk '{print $2}')
if [ "$first" != "$expect" ]; then
    echo "exercise $n: the skeleton's first failing test is '$first', expected '$expect'"
    cat "$log"
    exit 1
fi
if echo "$summary" | grep -qE '(^|[^0-9A-Za-z_])0x[0-9a-f]+'; then
    echo "exercise $n: the summary shows a value in hex; it must say what was expected in words"
    exit 1
fi
want=$(grep "^$expect *|" "$checks" | sed 's/^[^|]*| *//')
if [ -z "$want" ] || ! echo "$summary" | grep -qF "it checks: $want"; then
    echo "exercise $n: the summary does not say what $expect checks (a '$expect | ...' line of $checks)"
    exit 1
fi

"$solution" >"$log" 2>&1
rc=$?
summary=$(bash "$summarize" "$checks" "$log" "$rc")
src=$?
echo "--- exercise $n, solution (exit status $rc):"
echo "$summary"
if [ "$rc" != 0 ] || [ "$src" != 0 ]; then
    echo "exercise $n: the reference solution's tests fail"
    cat "$log"
    exit 1
fi
echo "exercise $n: ok"
