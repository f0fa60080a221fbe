#!/usr/bin/env bash
# format_test.sh — the C and CUDA sources of src/, kernels/ and viz/ (the packages'
# :layering_sources) are laid out as .clang-format says (clang-format 14, Debian 12's;
# tools/setup.sh installs it; tests/ and tools/ were formatted once with them, unchecked). A failure names each file and the first lines
# clang-format would change; `clang-format -i FILE` fixes them.
#
# First a check of the check: a badly laid-out file must be refused.
set -euo pipefail
cd "${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-trident}"
if ! command -v clang-format >/dev/null; then
    echo "FAIL: clang-format is not installed (bash tools/setup.sh installs it)"; exit 1
fi
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
cp .clang-format "$tmp/.clang-format"
printf 'int  f( int x ){return x;}\n' > "$tmp/bad.c"
if clang-format --dry-run --Werror "$tmp/bad.c" 2>/dev/null; then
    echo "FAIL: clang-format accepted a badly laid-out file"; exit 1
fi

bad=0
while IFS= read -r f; do
    if ! out=$(clang-format --dry-run --Werror "$f" 2>&1); then
        echo "not formatted: $f"; echo "$out" | head -6; bad=$((bad + 1))
    fi
done < <(find -L src kernels viz -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | LC_ALL=C sort)
n=$(find -L src kernels viz -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | wc -l)
if [ "$bad" -gt 0 ]; then echo "FAIL: $bad of $n files are not laid out as .clang-format says"; exit 1; fi
echo "PASS: $n files laid out as .clang-format says"
