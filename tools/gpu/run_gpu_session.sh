#!/usr/bin/env bash
# run_gpu_session.sh — everything one lent GPU session checks, as ONE prepared run that ends
# within a deadline and leaves its results where they come back even when it is cut short.
#
# Prepare on the build machine (Bazel, nvcc, MPI, Cairo):   tools/gpu/bundle.sh
# Run on the GPU machine, from the repository root:         RESULTS_DIR=$OUT tools/gpu/run_gpu_session.sh
# (the device tool: carry ["gpu_bundle"], timeout_s a little above DEADLINE).
#
# Phases, most important first; each has a time limit, and none starts past the deadline:
#   facts     the GPU, driver, CUDA/NCCL libraries found, the bundle's choices
#   kernels   ops_cuda_test: every CUDA kernel against its CPU twin (on failure: once more
#             under compute-sanitizer, to name the kernel and the address)
#   nccl      comm_nccl_test: the NCCL backend at world size 1 on device buffers
#   gemm      gemm_bench: cuBLAS TFLOP/s on GPT-2 small's GEMM shapes, fp32 and bf16
#   train     run_gpu_train.sh: --device cuda vs --device cpu, serial fp32 and bf16, and 8 ranks
#             (TP 2 × PP 2 × DP 2, ZeRO-1) sharing the GPU vs the serial cpu run
#   timeline  a traced GPU run of a larger model; timelines (CUDA-event kernel times) drawn
#             for it, the serial cuda run and the 8-rank run, at a step without evaluation
#   bench     trident bench --suite device --device cuda (GPT-2 small, fp32 and bf16)
#   torch     tools/gpu/torch_gpt2_step.py: the same step in eager PyTorch, same shape and GPU
#   compare   tokens/s side by side (bench_side_by_side.md)
#
# What comes back (at most 8 files; $RESULTS_DIR is the device tool's $OUT): summary.txt (one
# line per phase, then the train table and the side-by-side table), results.tgz (every log,
# metrics and trace; refreshed after every phase), timeline_*.png, bench_side_by_side.md.
#
# Environment: RESULTS_DIR (default /tmp/trident_gpu_session/out), DEADLINE seconds (default
# 450), BUNDLE (default gpu_bundle), PYTHON (default python3), SKIP="phase phase" to skip some.
# DRY_RUN=1 tries the script on a machine without a GPU: cpu-guarded instead of cuda, small
# shapes, no kernel/NCCL/cuBLAS phases (PYTHON must have torch for the torch phase).
# Exit status: 0 every phase passed, 77 no GPU, 1 otherwise.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT" || exit 1
T0=$SECONDS
DEADLINE="${DEADLINE:-450}"
BUNDLE="${BUNDLE:-$ROOT/gpu_bundle}"
PYTHON="${PYTHON:-python3}"
SKIP="${SKIP:-}"
W=/tmp/trident_gpu_session           # the work folder: logs and run directories
DEV=cuda BENCH_QUICK="" TORCH_ARGS=()
MEDIUM_ARGS="--num-layers 6 --hidden-size 512 --num-attention-heads 8 --seq-length 512 --micro-batch-size 4 --global-batch-size 16"
if [[ -n "${DRY_RUN:-}" ]]; then
    DEV=cpu-guarded BENCH_QUICK=--quick SKIP="$SKIP kernels nccl gemm"
    MEDIUM_ARGS="--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 --micro-batch-size 2 --global-batch-size 4"
    TORCH_ARGS=(--device cpu --layers 2 --hidden 64 --heads 4 --seq 32 --batch 2 --steps 3 --cases fp32:math,bf16:math)
fi
OUTDIR="${RESULTS_DIR:-$W/out}"      # what comes back
rm -rf "$W"; mkdir -p "$W" "$OUTDIR"
PHASES="$W/phases.txt"; : > "$PHASES"
FAILED=0

say() { printf '== [%3ds] %s\n' $((SECONDS - T0)) "$*"; }
pack() { # refresh what comes back: summary, the archive of everything, the pictures
    {
        printf '%-10s %-6s %6s  %s\n' phase result secs detail
        cat "$PHASES"
        [[ -f "$W/train/summary.txt" ]] && { echo; echo "train checks (tools/gpu/run_gpu_train.sh):"; cat "$W/train/summary.txt"; }
        [[ -f "$W/bench_side_by_side.md" ]] && { echo; cat "$W/bench_side_by_side.md"; }
    } > "$OUTDIR/summary.txt.tmp" && mv "$OUTDIR/summary.txt.tmp" "$OUTDIR/summary.txt"
    tar -czf "$OUTDIR/results.tgz.tmp" -C "$W" --exclude=out --exclude='trace.json' . 2>/dev/null \
        && mv "$OUTDIR/results.tgz.tmp" "$OUTDIR/results.tgz"
    for f in "$W"/timeline_*.png "$W"/bench_side_by_side.md; do [[ -f "$f" ]] && cp "$f" "$OUTDIR/"; done
    return 0
}
# phase NAME LIMIT CMD...: run CMD (output in NAME.log) within LIMIT seconds and the deadline
phase() {
    local name="$1" limit="$2"; shift 2
    if [[ " $SKIP " == *" $name "* ]]; then
        printf '%-10s %-6s %6s  %s\n' "$name" SKIP 0 "SKIP names it" >> "$PHASES"; return 0
    fi
    local left=$((DEADLINE - (SECONDS - T0)))
    if (( left < 15 )); then
        printf '%-10s %-6s %6s  %s\n' "$name" SKIP 0 "deadline (${DEADLINE}s) reached" >> "$PHASES"
        say "$name: skipped, deadline reached"; pack; return 0
    fi
    (( limit > left )) && limit=$left
    say "$name (limit ${limit}s): $*"
    local t=$SECONDS
    # bash -c: a phase may be one of the functions below (exported), or any program
    timeout -k 5 "$limit" bash -c '"$@"' "$name" "$@" > "$W/$name.log" 2>&1
    local rc=$? secs=$((SECONDS - t)) result=PASS detail
    detail="$(grep -v '^\s*$' "$W/$name.log" | tail -1 | cut -c1-150)"
    if [[ $rc -eq 124 || $rc -eq 137 ]]; then result=FAIL detail="timed out after ${limit}s; $detail"
    elif [[ $rc -ne 0 ]]; then result=FAIL detail="exit $rc; $detail"; fi
    [[ $result == FAIL ]] && FAILED=1
    printf '%-10s %-6s %6s  %s\n' "$name" "$result" "$secs" "$detail" >> "$PHASES"
    sed 's/^/   /' "$W/$name.log" | tail -"${TAIL_LINES:-6}"
    pack
    return $rc
}

# ---- facts, and the bundle ---------------------------------------------------------------------
facts() {
    if [[ $DEV == cuda ]]; then nvidia-smi || return 77; fi
    nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version,clocks.max.sm --format=csv
    echo "--- nvcc: $(nvcc --version 2>/dev/null | tail -1)"
    echo "--- CUDA libraries"; ls /usr/local/cuda/lib64 2>/dev/null | grep -E '^lib(cublas|cudart|nccl)' | head
    ldconfig -p | grep -E 'libnccl|libcublas\.|libcudart\.' | head
    echo "--- NCCL files"; find /usr /opt /lib /lib64 -maxdepth 8 -name 'libnccl.so*' 2>/dev/null | head
    echo "--- python: $("$PYTHON" -c 'import torch, sys; print(sys.executable, torch.__version__, torch.version.cuda)' 2>&1)"
    echo "--- glibc $(getconf GNU_LIBC_VERSION); $(nproc) cores; $(uname -r)"
    # shellcheck disable=SC1091
    source "$BUNDLE/env.sh" && trident_bundle_info && trident --help > /dev/null && echo "trident starts"
}
export W BUNDLE PYTHON DEV MEDIUM_ARGS
export -f facts
[[ -f "$BUNDLE/env.sh" ]] || { echo "run_gpu_session: no bundle at $BUNDLE (tools/gpu/bundle.sh, carry gpu_bundle)" >&2; exit 1; }
TAIL_LINES=12 phase facts 30 facts
if [[ $DEV == cuda ]] && ! grep -q 'NVIDIA' "$W/facts.log"; then say "no GPU: nothing else runs"; exit 77; fi
# The bundle's libraries (its slim OpenBLAS above all) must not reach Python's programs.
PY_ENV=(env "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}" "PATH=$PATH")
# shellcheck disable=SC1091
source "$BUNDLE/env.sh"

# ---- kernels, NCCL, cuBLAS -----------------------------------------------------------------------
if ! TAIL_LINES=25 phase kernels 150 ops_cuda_test; then
    if command -v compute-sanitizer > /dev/null; then
        phase kernels_memcheck 120 compute-sanitizer --tool memcheck --print-limit 20 ops_cuda_test
    fi
fi
if ! TAIL_LINES=10 phase nccl 60 comm_nccl_test; then
    TAIL_LINES=30 NCCL_DEBUG=INFO phase nccl_debug 60 comm_nccl_test
fi
TAIL_LINES=16 phase gemm 60 gemm_bench --vocab-size 256

# ---- training: cuda vs cpu --------------------------------------------------------------------------
TAIL_LINES=8 RESULTS_DIR="$W/train" SKIP_BENCH=1 SKIP_GPU_CHECK=1 RUN_TIMEOUT=120 GPU_DEVICE=$DEV \
    phase train 300 tools/gpu/run_gpu_train.sh
if grep -q "FAIL.*$DEV run failed" "$W/train/summary.txt" 2>/dev/null && command -v compute-sanitizer > /dev/null; then
    phase train_memcheck 120 compute-sanitizer --tool memcheck --print-limit 20 trident train --device cuda \
        --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2 \
        --global-batch-size 4 --train-iters 2 --no-trace --run-dir "$W/memcheck_run"
fi

# ---- timelines: CUDA-event kernel times ---------------------------------------------------------------
timelines() {
    local rc=0
    # shellcheck disable=SC2086  # MEDIUM_ARGS is a list of flags
    trident train --device "$DEV" $MEDIUM_ARGS --train-iters 6 --log-interval 1 --eval-iters 0 \
        --run-dir "$W/cuda_medium" || rc=1
    trident render "$W/cuda_medium" --step 5 -o "$W/timeline_cuda_medium.png" || rc=1
    [[ -d "$W/train/${DEV}_fp32" ]] && { trident render "$W/train/${DEV}_fp32" --step 19 -o "$W/timeline_cuda_serial.png" || rc=1; }
    [[ -d "$W/train/${DEV}_np8" ]] && { trident render "$W/train/${DEV}_np8" --step 19 -o "$W/timeline_cuda_np8.png" || rc=1; }
    [[ -d "$W/train/${DEV}_np8" ]] && { trident render "$W/train/${DEV}_np8" --step 19 -o "$W/timeline_cuda_np8.txt" && cat "$W/timeline_cuda_np8.txt"; }
    return $rc
}
export -f timelines
TAIL_LINES=12 phase timeline 90 timelines

# ---- speed: trident's step vs cuBLAS, vs eager PyTorch ----------------------------------------------------
TAIL_LINES=20 phase bench 200 trident bench --suite device --device "$DEV" $BENCH_QUICK --run-dir "$W/bench"
TAIL_LINES=8 phase torch 150 "${PY_ENV[@]}" "$PYTHON" tools/gpu/torch_gpt2_step.py "${TORCH_ARGS[@]}" --out "$W/torch.jsonl"
TAIL_LINES=20 phase compare 20 "${PY_ENV[@]}" "$PYTHON" tools/gpu/side_by_side.py "$W/bench/bench.md" "$W/torch.jsonl" \
    -o "$W/bench_side_by_side.md"

say "done in $((SECONDS - T0)) s"
pack
cat "$OUTDIR/summary.txt"
exit "$FAILED"
