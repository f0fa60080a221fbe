#!/bin/bash
# exercise.sh — a student's run of a course exercise (tutorials/exercises/, tutorials/teaching.md).
#
#   bash tools/exercise.sh --list          the exercises: concept, file to edit, expected time
#   bash tools/exercise.sh N               build Trident's tests of exercise N with YOUR
#                                          tutorials/exercises/NN-*/student.c in place of the
#                                          real code, run them, say which test failed and why
#   bash tools/exercise.sh --reset N       start over: student.c = the skeleton again
#   bash tools/exercise.sh --solution N    where the reference solution is, and show it
#
# How: tests/exercises/splice.sh puts student.c between the "exercise N" markers of a copy of
# the real source (the real file is never changed); Bazel builds that copy with the concept's
# own test file (//tests/exercises:exN_student); tests/exercises/summarize.sh reads the run.
# Compiler errors name student.c and its line numbers. Exits 0 when every test passes.
set -euo pipefail
cd "$(dirname "$0")/.."
ex_root=tutorials/exercises

usage() {
    sed -n '3,9p' "$0" | sed 's/^# \{0,1\}//'
    exit "${1:-0}"
}

# The folder of exercise N ("3" or "03"), or a clear error.
dir_of() {
    local n=$1
    if ! [[ "$n" =~ ^[0-9]+$ ]]; then
        echo "exercise.sh: '$n' is not an exercise number (see: bash tools/exercise.sh --list)" >&2
        exit 2
    fi
    local d
    d=$(ls -d "$ex_root"/"$(printf '%02d' "$((10#$n))")"-* 2>/dev/null | head -1)
    if [ -z "$d" ]; then
        echo "exercise.sh: there is no exercise $n (see: bash tools/exercise.sh --list)" >&2
        exit 2
    fi
    echo "$d"
}

field() { grep -m1 "^$1:" "$2/checks.txt" | sed "s/^$1: *//"; }

list() {
    printf '%-3s %-58s %-7s %s\n' "N" "concept" "minutes" "you edit"
    for d in "$ex_root"/[0-9][0-9]-*/; do
        d=${d%/}
        local n=${d##*/}
        n=$((10#${n%%-*}))
        local title
        title=$(field title "$d" | sed 's/^exercise [0-9]* — //; s/ (tests.*//')
        printf '%-3s %-58s %-7s %s\n' "$n" "$title" "$(field minutes "$d")" "$d/student.c"
    done
    echo
    echo "Run one: bash tools/exercise.sh N   (the contract is at the top of student.c)"
}

solution() {
    local n=$1 d src
    d=$(dir_of "$n")
    src=$(field source "$d")
    local from to
    from=$(grep -n "/\* exercise $n begins" "$src" | cut -d: -f1)
    to=$(grep -n "/\* exercise $n ends \*/" "$src" | cut -d: -f1)
    echo "The reference solution of exercise $n is Trident's own code: $src, lines $from-$to"
    echo "(between the 'exercise $n begins' and 'exercise $n ends' markers):"
    echo
    sed -n "${from},${to}p" "$src"
}

run() {
    local d n
    d=$(dir_of "$1")
    n=$((10#$1))
    [ -f "$d/student.c" ] || cp "$d/skeleton.c" "$d/student.c"
    echo "  building the tests with $d/student.c ..."
    local log
    log=$(mktemp)
    if ! bazel build --jobs 2 "//tests/exercises:ex${n}_student" >"$log" 2>&1; then
        echo "  your file does not compile; the compiler says (line numbers are student.c's):"
        grep -v "^ERROR:\|^INFO:\|^FAILED:\|^Loading\|^Analyzing\|^Target\|^Use --\|^\[" "$log" |
            sed 's/^/    /' | head -40
        rm -f "$log"
        exit 1
    fi
    grep -E "student.c:[0-9]+:[0-9]+: warning" "$log" | sed 's/^/  compiler: /' | head -10 || true
    echo "  running them ..."
    local rc=0
    "bazel-bin/tests/exercises/ex${n}_student" >"$log" 2>&1 || rc=$?
    local src=0
    bash tests/exercises/summarize.sh "$d/checks.txt" "$log" "$rc" || src=$?
    rm -f "$log"
    if [ "$src" = 0 ]; then
        echo "  Done. Compare with the reference: bash tools/exercise.sh --solution $n"
    else
        echo "  Not yet. Fix the first failure, then run: bash tools/exercise.sh $n"
    fi
    exit "$src"
}

case "${1:-}" in
"" | -h | --help) usage 0 ;;
--list) list ;;
--reset)
    [ $# -eq 2 ] || usage 2
    d=$(dir_of "$2")
    cp "$d/skeleton.c" "$d/student.c"
    echo "$d/student.c is the skeleton again."
    ;;
--solution)
    [ $# -eq 2 ] || usage 2
    dir_of "$2" >/dev/null
    solution "$((10#$2))"
    ;;
-*)
    echo "exercise.sh: unknown option '$1' (one of --list, --reset N, --solution N)" >&2
    exit 2
    ;;
*) run "$1" ;;
esac
