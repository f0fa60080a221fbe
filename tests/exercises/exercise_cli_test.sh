#!/bin/bash
# exercise_cli_test.sh — the parts of tools/exercise.sh and tests/exercises/splice.sh that need
# no build: the list, the reference's place, and clear one-line errors for bad arguments and
# for a source without its markers. (The student's run itself is the exercise_N_test path:
# the same splice, the same summary.)
set -uo pipefail
status=0
ex=tools/exercise.sh
check() { # check NAME WANT_RC WANT_TEXT -- CMD...
    local name=$1 want_rc=$2 want=$3
    shift 4
    local out rc
    out=$("$@" 2>&1)
    rc=$?
    if [ "$rc" != "$want_rc" ] || ! grep -qF -- "$want" <<<"$out"; then
        echo "FAILED $name: exit $rc (want $want_rc), output lacks '$want':"
        echo "$out" | sed 's/^/    /'
        status=1
    else
        echo "ok $name"
    fi
}
check list 0 "6   ZeRO-1 shard ranges" -- bash $ex --list
check list_names_the_file 0 "tutorials/exercises/05-one-f-one-b/student.c" -- bash $ex --list
check no_such_exercise 2 "there is no exercise 9 (see: bash tools/exercise.sh --list)" -- bash $ex 9
check not_a_number 2 "'x' is not an exercise number" -- bash $ex x
check unknown_option 2 "unknown option '--bogus'" -- bash $ex --bogus
check solution_shows_the_region 0 "*mb = group * p + in_group % p;" -- bash $ex --solution 5
check solution_names_the_file 0 "src/zero/shard_ranges.c, lines" -- bash $ex --solution 6
printf 'int main(void) { return 0; }\n' >"${TEST_TMPDIR:-/tmp}/plain.c"
check splice_without_markers 1 "must hold one '/* exercise 3 begins' line" -- \
    bash tests/exercises/splice.sh 3 "${TEST_TMPDIR:-/tmp}/plain.c" "${TEST_TMPDIR:-/tmp}/plain.c"
# The splice keeps the file around the region and names the student's file for the compiler.
out=$(bash tests/exercises/splice.sh 1 src/runtime/groups.c tutorials/exercises/01-rank-coordinates/skeleton.c)
if grep -q '#line 1 "tutorials/exercises/01-rank-coordinates/skeleton.c"' <<<"$out" &&
    grep -q "int pg_group_size" <<<"$out" && ! grep -q "rest = rank / l->tp" <<<"$out"; then
    echo "ok splice_replaces_only_the_region"
else
    echo "FAILED splice_replaces_only_the_region"
    status=1
fi
exit $status
