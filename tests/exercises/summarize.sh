#!/bin/bash
# summarize.sh — turns a cmocka test run into a student's summary: which test failed, what it
# checks, and what it said.
#
#   summarize.sh CHECKS LOG RC
#
# CHECKS is an exercise's checks.txt ("test_name | what it checks" lines, # comments, and one
# "title: ..." line); LOG the run's stdout+stderr; RC its exit status. A test failed when
# cmocka printed "[  FAILED  ] name", or when the program stopped inside it (a test under
# mpirun aborts the job at its first failure; a CHECK or die() ends the program): then the
# last "[ RUN      ]" without its "[       OK ]" is the one. Where cmocka names the failing
# line (file:line) and the test file is readable from the current directory, the summary
# quotes that line; and where that line is an assert_int_equal or assert_string_equal, the
# summary says in words what cmocka said in hex: cmocka's "0 != 0x6" under
# `assert_int_equal(sh->world_end, sh->world_start + r->shard_numel)` becomes
# "sh->world_end is 0; expected sh->world_start + r->shard_numel = 6". Prints the summary;
# exits 0 when every test passed and RC was 0, 1 otherwise.
#
# Used by tools/exercise.sh (the student's run) and tests/exercises/exercise_test.sh (CI).
set -uo pipefail
checks=$1 log=$2 rc=$3
awk -v rc="$rc" -v checks="$checks" '
    function trim(s) { gsub(/^[ \t]+|[ \t]+$/, "", s); return s }
    # cmocka prints integers as %#lx: "0x1a" -> "26", "0xffffffffffffffff" -> "-1".
    function dec(v,    neg, i, d, x, c) {
        if (v !~ /^0x[0-9a-f]+$/) return v
        v = substr(v, 3); neg = length(v) == 16 && substr(v, 1, 1) >= "8"; x = 0
        for (i = 1; i <= length(v); i++) {
            d = index("0123456789abcdef", substr(v, i, 1)) - 1
            x = x * 16 + (neg ? 15 - d : d)
        }
        return neg ? "-" (x + 1) : "" x
    }
    # The two arguments of an assert call `NAME(X, Y);`, cut at the comma outside brackets.
    function args(s, out,    i, c, depth, body) {
        body = substr(s, index(s, "(") + 1); sub(/\);?[ \t]*$/, "", body); depth = 0
        for (i = 1; i <= length(body); i++) {
            c = substr(body, i, 1)
            if (c ~ /[([{]/) depth++
            else if (c ~ /[)\]}]/) depth--
            else if (c == "," && depth == 0) {
                out[1] = trim(substr(body, 1, i - 1)); out[2] = trim(substr(body, i + 1)); return 1
            }
        }
        return 0
    }
    # cmocka "A != B" said by the assert src, in words ("" when src is another assert).
    function in_words(src, cmp,    a, b, at, xy) {
        at = index(cmp, " != "); a = substr(cmp, 1, at - 1); b = substr(cmp, at + 4)
        if (src ~ /^assert_int_equal\(/ && args(src, xy))
            return xy[1] " is " dec(a) "; expected " (xy[2] ~ /^-?[0-9]+$/ ? "" : xy[2] " = ") dec(b)
        if (src ~ /^assert_string_equal\(/ && args(src, xy))
            return "got      " a "\n      expected " b
        return ""
    }
    BEGIN {
        while ((getline line < checks) > 0) {
            if (line ~ /^title:/) { title = trim(substr(line, 7)); continue }
            if (line ~ /^#/ || index(line, "|") == 0) continue
            k = trim(substr(line, 1, index(line, "|") - 1))
            what[k] = trim(substr(line, index(line, "|") + 1))
        }
    }
    /^\[ RUN      \] / { cur = trim(substr($0, 14)); nmsg[cur] = 0; ran[++nran] = cur; open = 1; next }
    /^\[       OK \] / { ok[trim(substr($0, 14))] = 1; open = 0; next }
    /^\[  FAILED  \] / {
        t = trim(substr($0, 14))
        if (t ~ /^[0-9]+ test/) { open = 0; next }
        failed[t] = 1; open = 0; next
    }
    /^\[  PASSED  \]|^\[==========\]|^\[  SKIPPED \]/ { open = 0; next }
    open && nmsg[cur] < 8 {
        line = $0
        if (line ~ /^ *$/ || line ~ /^-{10}/ || line ~ /mpirun|MPI_ABORT|MPI_COMM_WORLD|NOTE: invoking|You may or may not|exited on signal|Primary job/) next
        if (line ~ /^\[[A-Za-z0-9_.-]+:[0-9]+\]/) next
        if (line ~ /\[0x[0-9a-f]+\]/) next # a backtrace frame of an aborting rank: addresses
        sub(/\[[A-Za-z0-9_.-]+:[0-9]+\].*$/, "", line)
        msg[cur, ++nmsg[cur]] = line
        if (match(line, /^\[  ERROR   \] --- .* != /)) { # an assert comparing two values
            cmp = substr(line, 18); sub(/ *\[   LINE.*$/, "", cmp); cmpat = nmsg[cur]
        }
        if (match(line, /--- [^ :]+:[0-9]+: error/)) { # the failing line, for context
            loc = substr(line, RSTART + 4, RLENGTH - 11)
            file = substr(loc, 1, index(loc, ":") - 1); ln = substr(loc, index(loc, ":") + 1) + 0
            k = 0; src = ""
            while (k < ln && (getline sl < file) > 0) { k++; if (k == ln) src = sl }
            close(file)
            if (src != "") msg[cur, ++nmsg[cur]] = "  the line: " trim(src)
            if (src != "" && cmp != "" && (w = in_words(trim(src), cmp)) != "")
                msg[cur, cmpat] = w
            cmp = ""
        }
    }
    END {
        nfail = 0; npass = 0
        for (i = 1; i <= nran; i++) {
            t = ran[i]
            if (t in failed || !(t in ok)) order[++nfail] = t
            else npass++
        }
        if (title != "") printf "%s\n", title
        if (nfail == 0 && rc == 0 && nran > 0) {
            printf "  all %d tests pass.\n", npass
            exit 0
        }
        if (nran == 0) printf "  no test ran (exit status %d): see the output above.\n", rc
        for (i = 1; i <= nfail && i <= 3; i++) { # the first three in full: fix those first
            t = order[i]
            stopped = !(t in failed)
            printf "  FAILED %s%s\n", t, stopped ? " (the program stopped inside this test)" : ""
            printf "    it checks: %s\n", (t in what) ? what[t] : "(see the test file)"
            if (nmsg[t] > 0) printf "    it said:\n"
            for (j = 1; j <= nmsg[t]; j++) printf "      %s\n", msg[t, j]
        }
        if (nfail > 3) {
            printf "  also failed:"
            for (i = 4; i <= nfail; i++) printf " %s", order[i]
            printf "\n"
        }
        if (npass) printf "  passed: %d test%s.\n", npass, npass == 1 ? "" : "s"
        exit 1
    }
' "$log"
