#!/usr/bin/env bash
# readme_test.sh — the front door stays true (tools/check_readme.py): README.md is at most 150
# lines; its reader's path has 12 to 16 stops numbered in order, and every file a stop names
# exists and every function it names is defined in the file named before it; the relative links
# of README.md and docs/*.md name existing files. A failure names the stop and what is missing.
#
# First a check of the checker on a tiny tree: a missing file, a function that is not defined
# where the stop says, a stop out of order, too few stops and a broken link must each be named.
set -euo pipefail
cd "${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-trident}"
check=tools/check_readme.py

bad="${TEST_TMPDIR:-$(mktemp -d)}/readme"
mkdir -p "$bad/src/pp" "$bad/docs"
printf 'void pp_plan(void) {\n}\n' > "$bad/src/pp/schedule.c"
cat > "$bad/README.md" <<'MD'
# A tree with a stale path

## The reader's path

1. **Schedules.** `src/pp/schedule.c`: `pp_plan()`, then `pp_gone()`.
3. **Executor.** `src/pp/executor.c`: `pp_executor_run()`.

See [the notes](docs/README.md).
MD
if out=$(python3 "$check" --root "$bad"); then
    echo "FAIL: check_readme.py accepted a stale reader's path:"; echo "$out"; exit 1
fi
for want in "stop 1 (Schedules): pp_gone() is not defined in src/pp/schedule.c" \
    "stop 3 (Executor): numbered 3, expected 2" "stop 3 (Executor): src/pp/executor.c does not exist" \
    "the reader's path has 2 stops" "README.md:8: links docs/README.md, which does not exist"; do
    grep -qF "$want" <<<"$out" || { echo "FAIL: not named: $want"; echo "$out"; exit 1; }
done
if grep -q "pp_plan()" <<<"$out"; then echo "FAIL: a defined function refused:"; echo "$out"; exit 1; fi

for d in src kernels viz docs tutorials; do
    [ -d "$d" ] || { echo "FAIL: $d/ is not in the runfiles"; exit 1; }
done
python3 "$check" --root . --path
python3 "$check" --root .
