#!/usr/bin/env bash
# run_gpu_train.sh — on the GPU machine, from the repository root, after tools/gpu/bundle.sh ran
# here and gpu_bundle/ was carried there: train the real trident binary on the GPU and check
# that it computes what the CPU computes (see tools/gpu/README.md, "Training on the GPU machine").
#
#   1. trident train --device cpu  vs  --device cuda, same model, seed and data, ITERS steps:
#      every logged loss within FP32_TOL relative (default 1e-5); --bf16 within BF16_TOL (2e-2)
#   2. mpirun -np 8 trident train --device cuda, TP 2 × PP 2 (interleaved) × DP 2 with ZeRO-1 (8 ranks share
#      one GPU, so communication goes through MPI with host staging) vs the serial cpu run:
#      FP32_TOL
#   3. trident bench --suite device --device cuda $BENCH_ARGS (GPT-2 small: model ÷ cuBLAS FLOP/s)
#
#   2b. (EXTRA=1, the default) 4 ranks: TP 2 + sequence parallel + ZeRO-3; PP 4 zero-bubble
#      (zb-h1); PP 2 GPipe + DP 2 + ZeRO-2; serially, selective recompute (FP32_TOL) and --fp16
#      (BF16_TOL)
#
# Not here: the kernel-by-kernel tests (run_gpu_checks.sh), performance targets.
#
# Environment (all optional):
#   RESULTS_DIR     logs, run directories and summary.txt (default /tmp/trident_gpu_train)
#   BUNDLE          the carried bundle (default gpu_bundle at the repository root)
#   GPU_DEVICE      the device under test (default cuda; cpu-guarded or cpu to try the script
#                   on a machine without a GPU, with SKIP_GPU_CHECK=1)
#   ITERS           training steps per run (default 20)
#   MODEL_ARGS      model and batch flags shared by every run (default: a small GPT, below)
#   NP              ranks of check 2 (default 8); RUN_TIMEOUT seconds per run (default 900)
#   FP32_TOL, BF16_TOL  relative loss tolerances (default 1e-5 and 2e-2)
#   BENCH_ARGS      flags of check 3 besides --device (default --quick); SKIP_BENCH=1 skips it
#   SKIP_GPU_CHECK=1  do not ask nvidia-smi for a GPU
#
# Exit status: 0 every check passed (or was skipped), 77 no GPU visible, 1 otherwise.
# No python: the loss series are compared with awk.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT" || exit 1
BUNDLE="${BUNDLE:-$ROOT/gpu_bundle}"
RESULTS_DIR="${RESULTS_DIR:-/tmp/trident_gpu_train}"
GPU_DEVICE="${GPU_DEVICE:-cuda}"
ITERS="${ITERS:-20}"
NP="${NP:-8}"
FP32_TOL="${FP32_TOL:-1e-5}"
BF16_TOL="${BF16_TOL:-2e-2}"
RUN_TIMEOUT="${RUN_TIMEOUT:-900}"
BENCH_ARGS="${BENCH_ARGS:-}"  # e.g. --quick
MODEL_ARGS="${MODEL_ARGS:---num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 64 --micro-batch-size 4 --global-batch-size 16}"
# shellcheck disable=SC2206  # MODEL_ARGS is a list of flags
COMMON=($MODEL_ARGS --seed 1234 --train-iters "$ITERS" --log-interval 1)

say() { printf '== %s\n' "$*"; }
mkdir -p "$RESULTS_DIR"
RESULTS_DIR="$(cd "$RESULTS_DIR" && pwd)"
SUMMARY="$RESULTS_DIR/summary.txt"
: > "$SUMMARY"
FAILED=0
record() { # record NAME RESULT DETAIL: one row of the final table
    printf '%-48s %-5s %s\n' "$1" "$2" "$3" >> "$SUMMARY"
    [[ "$2" == FAIL ]] && FAILED=1
    return 0
}

# ---- a GPU, asked before the bundle's libraries are on the path ---------------------------------
if [[ -z "${SKIP_GPU_CHECK:-}" ]]; then
    if ! nvidia-smi -L > "$RESULTS_DIR/nvidia-smi.txt" 2>&1 || ! grep -q '^GPU' "$RESULTS_DIR/nvidia-smi.txt"; then
        cat "$RESULTS_DIR/nvidia-smi.txt" >&2
        say "no GPU visible (nvidia-smi): nothing run (exit 77)"
        exit 77
    fi
    cat "$RESULTS_DIR/nvidia-smi.txt"
fi

[[ -f "$BUNDLE/env.sh" ]] || { echo "run_gpu_train: no bundle at $BUNDLE (run tools/gpu/bundle.sh on the build machine, carry gpu_bundle)" >&2; exit 1; }
# shellcheck disable=SC1091
source "$BUNDLE/env.sh"
trident_bundle_info | tee "$RESULTS_DIR/bundle_info.txt"
if ! trident train --help > "$RESULTS_DIR/train_help.txt" 2>&1; then
    cat "$RESULTS_DIR/train_help.txt" >&2
    echo "run_gpu_train: the bundled trident does not start (see above)" >&2
    exit 1
fi
if ! grep -q -- '--device' "$RESULTS_DIR/train_help.txt"; then
    echo "run_gpu_train: this trident has no --device flag (bundle a newer build)" >&2
    exit 1
fi

# ---- helpers ------------------------------------------------------------------------------------
run() { # run NAME CMD...: CMD with its output in NAME.log and --run-dir NAME; status of CMD
    local name="$1"; shift
    rm -rf "${RESULTS_DIR:?}/$name"
    say "$name: $*"
    timeout "$RUN_TIMEOUT" "$@" --run-dir "$RESULTS_DIR/$name" > "$RESULTS_DIR/$name.log" 2>&1
    local rc=$?
    tail -3 "$RESULTS_DIR/$name.log" | sed 's/^/   /'
    [[ $rc -eq 0 ]] || say "$name: exit $rc (see $RESULTS_DIR/$name.log)"
    return $rc
}
# compare_losses REF TEST TOL: every "loss" of REF/metrics.jsonl vs TEST's at the same step;
# prints "N steps, max rel diff X" or what differs; status 0 when all are within TOL relative.
compare_losses() {
    awk -v tol="$3" -v iters="$ITERS" '
        function field(line, key,    s) {
            if (!match(line, "\"" key "\":[^,}]*")) return ""
            s = substr(line, RSTART + length(key) + 3, RLENGTH - length(key) - 3)
            gsub(/[" ]/, "", s)
            return s
        }
        function finite(s) { return s ~ /^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/ }
        FNR == 1 { f++ }
        {
            st = field($0, "step"); l = field($0, "loss")
            if (st == "" || l == "") next
            if (f == 1) { ref[st] = l; order[++n] = st } else got[st] = l
        }
        END {
            if (n == 0) { print "no losses in the reference"; exit 1 }
            worst = 0; bad = 0; msg = ""
            for (i = 1; i <= n; i++) {
                st = order[i]
                if (!(st in got)) { bad++; if (bad <= 3) msg = msg sprintf(" step %s missing;", st); continue }
                a = ref[st]; b = got[st]
                if (!finite(a) || !finite(b)) { bad++; if (bad <= 3) msg = msg sprintf(" step %s: %s vs %s;", st, a, b); continue }
                d = a - b; if (d < 0) d = -d
                m = a < 0 ? -a : a; if (m < 1e-12) m = 1e-12
                r = d / m
                if (r > worst) worst = r
                if (r > tol) { bad++; if (bad <= 3) msg = msg sprintf(" step %s: %s vs %s (rel %.2e);", st, a, b, r) }
            }
            if (n < iters) { bad++; msg = msg sprintf(" only %d of %d steps logged;", n, iters) }
            printf "%d steps, max rel diff %.2e (tol %g)%s\n", n, worst, tol, (bad ? ";" msg : "")
            exit bad ? 1 : 0
        }' "$1/metrics.jsonl" "$2/metrics.jsonl" 2>&1
}
check_pair() { # check_pair LABEL REF TEST TOL: record the comparison of two finished runs
    local detail
    if detail="$(compare_losses "$RESULTS_DIR/$2" "$RESULTS_DIR/$3" "$4")"; then
        record "$1" PASS "$detail"
    else
        record "$1" FAIL "$detail"
    fi
}
train_pair() { # train_pair TAG TOL LABEL [FLAGS...]: cpu vs GPU_DEVICE, serial, with FLAGS
    local tag="$1" tol="$2" label="$3"; shift 3
    if ! run "ref_cpu_$tag" trident train --device cpu "${COMMON[@]}" "$@"; then
        record "$label" FAIL "the cpu run failed: ref_cpu_$tag.log"; return
    fi
    if ! run "${GPU_DEVICE}_$tag" trident train --device "$GPU_DEVICE" "${COMMON[@]}" "$@"; then
        record "$label" FAIL "the $GPU_DEVICE run failed: ${GPU_DEVICE}_$tag.log"; return
    fi
    check_pair "$label" "ref_cpu_$tag" "${GPU_DEVICE}_$tag" "$tol"
}

# ---- 1. serial: cpu vs the device, fp32 and mixed precision ---------------------------------------
train_pair fp32 "$FP32_TOL" "serial cpu vs $GPU_DEVICE, fp32 ($FP32_TOL)"
if grep -q -- '--bf16' "$RESULTS_DIR/train_help.txt"; then
    train_pair bf16 "$BF16_TOL" "serial cpu vs $GPU_DEVICE, --bf16 ($BF16_TOL)" --bf16
else
    record "serial cpu vs $GPU_DEVICE, bf16" SKIP "trident train has no --bf16"
fi

# ---- 2. ranks sharing one GPU (MPI with host staging) vs the serial cpu run -------------------------
# mpi_pair TAG NP LABEL FLAGS...: mpirun -np NP trident train --device GPU_DEVICE FLAGS vs ref_cpu_fp32
mpi_pair() {
    local tag="$1" np="$2" label="$3 vs serial cpu ($FP32_TOL)"; shift 3
    if [[ ! -f "$RESULTS_DIR/ref_cpu_fp32/metrics.jsonl" ]]; then
        record "$label" FAIL "no serial cpu run to compare with"
    elif run "${GPU_DEVICE}_$tag" mpirun -np "$np" --oversubscribe trident train --device "$GPU_DEVICE" \
            "$@" "${COMMON[@]}"; then
        check_pair "$label" ref_cpu_fp32 "${GPU_DEVICE}_$tag" "$FP32_TOL"
        local comm
        comm="$(grep -m1 -o 'communication: .*' "$RESULTS_DIR/${GPU_DEVICE}_$tag.log" || true)"
        [[ -n "$comm" ]] && sed -i "\$s|\$| [$comm]|" "$SUMMARY"
    else
        record "$label" FAIL "mpirun failed: ${GPU_DEVICE}_$tag.log"
    fi
}
mpi_pair "np$NP" "$NP" "$NP ranks $GPU_DEVICE TP2 PP2 interleaved DP2 ZeRO-1" \
    --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --use-distributed-optimizer \
    --num-layers-per-virtual-pipeline-stage 1

# ---- 2b. more of the paths a GPU has never run (EXTRA=0 skips them) --------------------------------
if [[ "${EXTRA:-1}" != 0 ]]; then
    mpi_pair np4_sp_zero3 4 "4 ranks $GPU_DEVICE TP2 SP DP2 ZeRO-3" --tensor-model-parallel-size 2 \
        --sequence-parallel --data-parallel-sharding-strategy optim_grads_params
    mpi_pair np4_zbh1 4 "4 ranks $GPU_DEVICE PP4 zb-h1" --pipeline-model-parallel-size 4 \
        --pipeline-schedule zb-h1
    mpi_pair np4_gpipe_zero2 4 "4 ranks $GPU_DEVICE PP2 gpipe DP2 ZeRO-2" \
        --pipeline-model-parallel-size 2 --pipeline-schedule gpipe \
        --data-parallel-sharding-strategy optim_grads
    train_pair recompute "$FP32_TOL" "serial cpu vs $GPU_DEVICE, selective recompute ($FP32_TOL)" \
        --recompute-granularity selective
    train_pair fp16 "$BF16_TOL" "serial cpu vs $GPU_DEVICE, --fp16 ($BF16_TOL)" --fp16
fi

# ---- 3. bench on the device -----------------------------------------------------------------------
if [[ -n "${SKIP_BENCH:-}" ]]; then
    record "bench --device $GPU_DEVICE" SKIP "SKIP_BENCH is set"
elif trident bench --help 2>&1 | grep -q -- '--device'; then
    # shellcheck disable=SC2086  # BENCH_ARGS is a list of flags
    if run "bench_$GPU_DEVICE" trident bench --suite device --device "$GPU_DEVICE" $BENCH_ARGS; then
        record "bench --device $GPU_DEVICE $BENCH_ARGS" PASS "table in bench_$GPU_DEVICE/bench.md"
    else
        record "bench --device $GPU_DEVICE $BENCH_ARGS" FAIL "see bench_$GPU_DEVICE.log"
    fi
else
    record "bench --device $GPU_DEVICE" SKIP "trident bench has no --device flag yet"
fi

# ---- summary ------------------------------------------------------------------------------------
echo
printf '%-48s %-5s %s\n' check result detail
cat "$SUMMARY"
echo "(logs and run directories: $RESULTS_DIR)"
exit "$FAILED"
