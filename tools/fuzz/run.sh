#!/usr/bin/env bash
# run.sh — fuzz Trident's file readers with libFuzzer + AddressSanitizer + UBSan.
#
#   tools/fuzz/run.sh [SECONDS] [TARGET...]      (default: 60 seconds each, every target)
#
# Targets (one harness each, in tools/fuzz/):
#   tensorfile   src/ckpt/tensorfile.c   tf_reader_open + the metadata scan
#   trace        src/trace/trace_read.c  trace_file_read
#   dataset      src/data/dataset.c      dataset_open on a byte file, samples, eval windows
#   metrics      src/trace/run_metrics.c run_metrics_read (metrics.jsonl) + the config.json label
#
# What it does: installs clang from Debian if no clang with libFuzzer is found (apt-get:
# clang-14 and libclang-rt-14-dev, which carries libFuzzer), builds each harness outside
# Bazel, makes seed inputs (a tiny checkpoint and trace from bazel-bin/trident when it is
# built), adds tests/ckpt/regressions/<target>/ as seeds, and runs each target for SECONDS.
# Crashing inputs land in $FUZZ_WORK/crashes/ (default FUZZ_WORK=/tmp/trident-fuzz); copy
# each into tests/ckpt/regressions/<target>/ once fixed, so regressions_test replays it.
# Exit status: 0 when no target found anything, 1 otherwise.
#
# Not here: the regression replay (tests/ckpt/regressions_test.c runs under Bazel).
set -euo pipefail

SECONDS_EACH="${1:-${FUZZ_SECONDS:-60}}"
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=(tensorfile trace dataset metrics)
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
WORK="${FUZZ_WORK:-/tmp/trident-fuzz}"
mkdir -p "$WORK/bin" "$WORK/crashes" "$WORK/scratch"
SCRATCH="$WORK/scratch" # each input is written to a file here: memory-backed if possible
if [ -d /dev/shm ] && [ -w /dev/shm ]; then SCRATCH="$(mktemp -d /dev/shm/trident-fuzz.XXXXXX)"; fi
trap 'case "$SCRATCH" in /dev/shm/*) rm -rf "$SCRATCH" ;; esac' EXIT

# ---- a clang that links libFuzzer --------------------------------------------------------
probe() { # probe CC: can CC build a fuzzer with both sanitizers?
    printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' \
        > "$WORK/probe.c"
    "$1" -fsanitize=fuzzer,address,undefined "$WORK/probe.c" -o "$WORK/probe" >/dev/null 2>&1
}
CC=""
for c in "${CC_FUZZ:-}" clang clang-14 clang-15 clang-16 clang-13; do
    if [ -n "$c" ] && command -v "$c" >/dev/null 2>&1 && probe "$c"; then CC="$c"; break; fi
done
if [ -z "$CC" ]; then
    echo "run.sh: no clang with libFuzzer; installing clang-14 and libclang-rt-14-dev from Debian"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq clang-14 libclang-rt-14-dev || $SUDO apt-get install -y -qq clang-14
    if probe clang-14; then CC=clang-14; else echo "run.sh: clang-14 cannot link -fsanitize=fuzzer" >&2; exit 2; fi
fi
echo "run.sh: compiler $CC ($("$CC" --version | head -1))"

# ---- build -------------------------------------------------------------------------------
CFLAGS=(-std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -g -O1 -I"$ROOT"
        -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
        -fno-omit-frame-pointer -Wall -Wextra -Wno-unused-parameter -Wno-unused-function)
CORE=("$ROOT/src/core/check.c" "$ROOT/src/core/crc32.c" "$ROOT/src/core/atomic_file.c"
      "$ROOT/src/core/file_read.c" "$ROOT/src/core/checked.c" "$ROOT/src/core/nofollow.c")
sources() {
    case "$1" in
    tensorfile) echo "$ROOT/src/ckpt/tensorfile.c $ROOT/src/ckpt/tensorfile_validate.c" ;;
    trace) echo "$ROOT/src/trace/trace.c $ROOT/src/trace/trace_read.c" ;;
    dataset) echo "$ROOT/src/data/dataset.c" ;;
    metrics) echo "$ROOT/src/trace/run_metrics.c $ROOT/src/trace/trace.c $ROOT/src/trace/trace_read.c" ;;
    *) echo "run.sh: unknown target '$1' (tensorfile, trace, dataset, metrics)" >&2; exit 2 ;;
    esac
}
for t in "${TARGETS[@]}"; do
    # shellcheck disable=SC2046
    "$CC" "${CFLAGS[@]}" "$ROOT/tools/fuzz/fuzz_$t.c" $(sources "$t") "${CORE[@]}" -lm -o "$WORK/bin/fuzz_$t"
done

# ---- seeds -------------------------------------------------------------------------------
for t in tensorfile trace dataset metrics; do mkdir -p "$WORK/corpus/$t"; done
TRIDENT="$ROOT/bazel-bin/trident"
if [ -x "$TRIDENT" ] && [ ! -e "$WORK/seed/done" ]; then
    rm -rf "$WORK/seed"
    "$TRIDENT" train --train-iters 1 --num-layers 1 --hidden-size 8 --num-attention-heads 1 \
        --seq-length 4 --global-batch-size 1 --micro-batch-size 1 --make-vocab-size-divisible-by 1 \
        --quiet --run-dir "$WORK/seed/run" --save "$WORK/seed/ck" >/dev/null
    cp "$WORK/seed/ck/iter_0000001/rank_00000.tck" "$WORK/corpus/tensorfile/seed_checkpoint.tck"
    cp "$WORK/seed/run/trace/rank0.trace" "$WORK/corpus/trace/seed_rank0.trace"
    cp "$WORK/seed/run/metrics.jsonl" "$WORK/corpus/metrics/seed_metrics.jsonl"
    cp "$WORK/seed/run/config.json" "$WORK/corpus/metrics/seed_config.json"
    touch "$WORK/seed/done"
fi
if [ -d "$WORK/corpus/dataset" ]; then
    printf '\x10\x2ahello trident, a tiny data file for the dataset loader.' > "$WORK/corpus/dataset/seed_text"
fi

# ---- run ---------------------------------------------------------------------------------
found=0
for t in "${TARGETS[@]}"; do
    echo "run.sh: fuzzing $t for $SECONDS_EACH s"
    seeds=("$WORK/corpus/$t")
    [ -d "$ROOT/tests/ckpt/regressions/$t" ] && seeds+=("$ROOT/tests/ckpt/regressions/$t")
    leaks=1 # every reader frees what it read before it refuses (a die() here is a longjmp)
    set +e
    FUZZ_SCRATCH_DIR="$SCRATCH" ASAN_OPTIONS="detect_leaks=$leaks:abort_on_error=0" \
    UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
        "$WORK/bin/fuzz_$t" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
        -max_len=65536 -print_final_stats=1 -artifact_prefix="$WORK/crashes/$t-" "${seeds[@]}" \
        > "$WORK/$t.log" 2>&1
    rc=$?
    set -e
    grep -E "^(#[0-9]+ *DONE|stat::number_of_executed_runs|SUMMARY|==[0-9]+==ERROR)" "$WORK/$t.log" | head -5 || true
    if [ $rc -ne 0 ]; then
        found=1
        echo "run.sh: $t FAILED (exit $rc); log $WORK/$t.log; inputs:"
        ls "$WORK/crashes/" | grep "^$t-" | sed 's/^/  /' || true
    else
        echo "run.sh: $t clean"
    fi
done
exit $found
