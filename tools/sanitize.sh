#!/usr/bin/env bash
# sanitize.sh — the whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer,
# then a valgrind leak check of a short serial training run.
#
#   tools/sanitize.sh            # both
#   tools/sanitize.sh asan       # only: bazel test --config=asan //...
#   tools/sanitize.sh valgrind   # only: valgrind on `trident train --train-iters 3`
#
# The asan config (.bazelrc) builds into its own output tree and runs each test under
# tools/sanitize/env.sh (options + tools/sanitize/lsan.supp). The valgrind step fails if a
# block is "definitely lost" and one of the 4 callers nearest its allocation is Trident's
# code; leaks that stay inside system libraries are counted but do not fail it.
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-all}"

if [[ "$what" == all || "$what" == asan ]]; then
    bazel test --config=asan //...
fi

if [[ "$what" == all || "$what" == valgrind ]]; then
    command -v valgrind >/dev/null || { echo "sanitize.sh: valgrind is not installed" >&2; exit 1; }
    bazel build //:trident
    run="$(mktemp -d)"
    log="$run/valgrind.log"
    # OpenBLAS threads make valgrind slow and noisy: one thread is enough for a leak check.
    OPENBLAS_NUM_THREADS=1 valgrind --leak-check=full --errors-for-leak-kinds=definite \
        --num-callers=40 --log-file="$log" \
        bazel-bin/trident train --train-iters 3 --no-trace --quiet --run-dir "$run/run"
    grep -E "definitely lost|indirectly lost|ERROR SUMMARY" "$log" || true
    # A definitely-lost block is ours when one of the 4 callers nearest the allocator is in
    # the trident binary (or names one of our source files): we allocated it, or asked a
    # library for it, and dropped it. Deeper frames do not count: fontconfig's caches, for
    # one, are allocated on behalf of our cairo_select_font_face and kept by design.
    ours="$(awk '/definitely lost in loss record/ {rec = $0; n = -1; hit = 0; next}
                 rec != "" && /^==[0-9]+== +(at|by) / {
                     n++; rec = rec "\n" $0
                     if (n >= 1 && n <= 4 && ($0 ~ /\/trident\)$/ || $0 ~ /\((src|kernels|viz)\/[^)]*:[0-9]+\)$/)) hit = 1
                     next }
                 rec != "" {if (hit) print rec; rec = ""}' "$log")"
    if [[ -n "$ours" ]]; then
        echo "$ours"
        echo "sanitize.sh: valgrind found leaks in Trident's own code (full log: $log)" >&2
        exit 1
    fi
    echo "sanitize.sh: valgrind: no leak from Trident's own code (full log: $log)"
fi
