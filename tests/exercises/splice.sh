#!/bin/bash
# splice.sh — puts a student's code between the exercise markers of a copy of a Trident source.
#
#   splice.sh N SOURCE PIECE [SOURCE_NAME PIECE_NAME] > OUT.c
#
# SOURCE holds exactly one region
#     /* exercise N begins: ... */
#     ... the reference code ...
#     /* exercise N ends */
# The copy keeps both marker lines and everything outside them, and puts PIECE in place of
# the reference code. #line directives make the compiler name PIECE_NAME (default PIECE) and
# its own line numbers for errors in the student's code, SOURCE_NAME for the rest.
# Used by the Bazel rules of tests/exercises/exercise.bzl and by tools/exercise.sh.
#
# Not here: building or running anything.
set -euo pipefail
if [ $# -lt 3 ]; then
    echo "usage: splice.sh N SOURCE PIECE [SOURCE_NAME PIECE_NAME]" >&2
    exit 2
fi
n=$1 src=$2 piece=$3
src_name=${4:-$src} piece_name=${5:-$piece}
begins=$(grep -c "/\* exercise $n begins" "$src" || true)
ends=$(grep -c "/\* exercise $n ends \*/" "$src" || true)
if [ "$begins" != 1 ] || [ "$ends" != 1 ]; then
    echo "splice.sh: $src_name must hold one '/* exercise $n begins' line and one" \
        "'/* exercise $n ends */' line (found $begins and $ends)" >&2
    exit 1
fi
awk -v n="$n" -v piece="$piece" -v src_name="$src_name" -v piece_name="$piece_name" '
    BEGIN { state = 0; printf "#line 1 \"%s\"\n", src_name }
    state == 0 && index($0, "/* exercise " n " begins") {
        print
        printf "#line 1 \"%s\"\n", piece_name
        while ((getline line < piece) > 0) print line
        state = 1
        next
    }
    state == 1 && index($0, "/* exercise " n " ends */") {
        printf "#line %d \"%s\"\n", NR, src_name
        print
        state = 2
        next
    }
    state == 1 { next }
    { print }
' "$src"
