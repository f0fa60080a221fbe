#!/usr/bin/env bash
# run_gpu_checks.sh — build and run the CUDA kernel tests and the GEMM benchmark on a GPU
# machine that has the CUDA toolkit but no Bazel, MPI or Cairo (see tools/gpu/README.md).
#
# Builds from this source tree with plain nvcc/gcc commands into $BUILD_DIR:
#   kernels/*.cu                        -> nvcc objects (the CUDA twins, kernels/ops_cuda.h)
#   kernels/ops_cpu.c + src/ oracles    -> the CPU twins the test compares against
#   src/device                          -> its bf16 linear products on cuda, also tested there
#   tests/kernels_cuda/ops_cuda_test    -> every kernel vs its CPU twin
#   tools/gpu/gemm_bench                -> cuBLAS TFLOP/s on the model's GEMM shapes
# OpenBLAS and cmocka are used when installed; otherwise the shims in tools/gpu/shim_cblas
# (a naive sgemm) and tools/gpu/shim_cmocka (the few cmocka calls the test makes) stand in.
#
# Environment (all optional):
#   CUDA_PATH    toolkit root (default /usr/local/cuda)
#   ARCH         compute capability without the dot, e.g. 90 (default: asked of nvidia-smi, else 90)
#   BUILD_DIR    where objects and binaries go (default /tmp/trident_gpu_build)
#   RESULTS_DIR  where the logs are copied (default $BUILD_DIR; e.g. $OUT on a lent device)
#   BENCH_ARGS   flags for gemm_bench (default: its GPT-2 small defaults); SKIP_BENCH=1 skips it
#   USE_SHIMS=1  use the shims even where OpenBLAS / cmocka are installed
#
# Exit status: 0 all passed, 77 no GPU visible (everything was still built), else failure.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
CUDA_PATH="${CUDA_PATH:-/usr/local/cuda}"
BUILD_DIR="${BUILD_DIR:-/tmp/trident_gpu_build}"
RESULTS_DIR="${RESULTS_DIR:-$BUILD_DIR}"
NVCC="$CUDA_PATH/bin/nvcc"
CC="${CC:-gcc}"
JOBS="$(nproc 2>/dev/null || echo 4)"

say() { printf '== %s\n' "$*"; }
[[ -x "$NVCC" ]] || { echo "run_gpu_checks: no nvcc at $NVCC (set CUDA_PATH)" >&2; exit 1; }
mkdir -p "$BUILD_DIR/obj" "$RESULTS_DIR"

if [[ -z "${ARCH:-}" ]]; then
    ARCH="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .' || true)"
    ARCH="${ARCH:-90}"
fi
LIBDIR="$CUDA_PATH/lib64"; [[ -d "$LIBDIR" ]] || LIBDIR="$CUDA_PATH/lib"
say "nvcc $("$NVCC" --version | tail -1), sm_$ARCH, $JOBS jobs, build in $BUILD_DIR"
nvidia-smi -L 2>/dev/null || echo "(nvidia-smi: no GPU listed)"

# ---- the CUDA twins: one nvcc per .cu, in parallel ----------------------------------------
NVCC_FLAGS=(-O3 -std=c++17 -Xcompiler -fPIC -I.
            -gencode "arch=compute_$ARCH,code=sm_$ARCH" -gencode "arch=compute_$ARCH,code=compute_$ARCH")
say "nvcc kernels/*.cu"
export NVCC BUILD_DIR
printf '%s\n' kernels/*.cu | xargs -P "$JOBS" -I{} sh -c \
    "\"\$NVCC\" $(printf '%q ' "${NVCC_FLAGS[@]}") -c {} -o \"\$BUILD_DIR/obj/\$(basename {} .cu).o\"" 
CUDA_OBJS=("$BUILD_DIR"/obj/*_cuda.o)

# ---- the CPU side: system OpenBLAS / cmocka when they link, shims otherwise ----------------
CFLAGS=(-std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -O2 -g -Wall -Wextra
        -Wno-unused-parameter -Wno-format-truncation -I. -isystem "$CUDA_PATH/include")
links() { # links <program text> <compiler args...>: true when it compiles and links
    local src="$1"; shift
    printf '%s\n' "$src" | "$CC" -x c - -o "$BUILD_DIR/probe" "$@" >/dev/null 2>&1
}
BLAS_FLAGS=() BLAS_SRCS=() BLAS_LIBS=()
[[ -n "${USE_SHIMS:-}" ]] || for inc in /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/openblas /usr/include; do
    if links '#include <cblas.h>
int main(void){float a=1,b=1,c=0;cblas_sgemm(CblasRowMajor,CblasNoTrans,CblasNoTrans,1,1,1,1,&a,1,&b,1,0,&c,1);return 0;}' \
        -I"$inc" -lopenblas; then
        BLAS_FLAGS=(-I"$inc") BLAS_LIBS=(-lopenblas); break
    fi
done
if [[ ${#BLAS_LIBS[@]} -eq 0 ]]; then
    say "no OpenBLAS: the CPU oracle uses tools/gpu/shim_cblas (naive sgemm)"
    BLAS_FLAGS=(-Itools/gpu/shim_cblas) BLAS_SRCS=(tools/gpu/shim_cblas/cblas_naive.c)
fi
CMOCKA_FLAGS=() CMOCKA_SRCS=() CMOCKA_LIBS=()
if [[ -z "${USE_SHIMS:-}" ]] && links '#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
int main(void){return 0;}' -lcmocka; then
    CMOCKA_LIBS=(-lcmocka)
else
    say "no cmocka: the test uses tools/gpu/shim_cmocka"
    CMOCKA_FLAGS=(-Itools/gpu/shim_cmocka) CMOCKA_SRCS=(tools/gpu/shim_cmocka/cmocka_mini.c)
fi
CUDA_LIBS=(-L"$LIBDIR" -Wl,-rpath,"$LIBDIR" -lcublas -lcublasLt -lcudart -lstdc++ -lm)

# tests/support/testing.c includes tools/mpi_env.h, which Bazel generates: the same script here.
mkdir -p "$BUILD_DIR/gen/tools"
sh tools/mpi_env_h.sh tools/mpi_env.sh > "$BUILD_DIR/gen/tools/mpi_env.h"
say "gcc ops_cuda_test"
# src/device (its bf16 linear products on cuda, tested there too) with TRIDENT_CUDA, as Bazel does
"$CC" "${CFLAGS[@]}" -I"$BUILD_DIR/gen" -DTRIDENT_CUDA "${BLAS_FLAGS[@]}" "${CMOCKA_FLAGS[@]}" \
    -o "$BUILD_DIR/ops_cuda_test" \
    tests/kernels_cuda/ops_cuda_test.c tests/kernels_cuda/cuda_twin.c tests/support/testing.c \
    kernels/ops_cpu.c src/optim/adamw.c src/precision/convert.c src/precision/loss_scaler.c \
    src/device/device.c src/device/device_memory.c src/core/*.c \
    src/trace/causality.c src/trace/trace.c src/trace/trace_read.c \
    "${BLAS_SRCS[@]}" "${CMOCKA_SRCS[@]}" "${CUDA_OBJS[@]}" \
    "${BLAS_LIBS[@]}" "${CMOCKA_LIBS[@]}" "${CUDA_LIBS[@]}"
say "gcc gemm_bench"
"$CC" "${CFLAGS[@]}" -o "$BUILD_DIR/gemm_bench" tools/gpu/gemm_bench.c src/core/check.c \
    src/core/flags.c "${CUDA_OBJS[@]}" "${CUDA_LIBS[@]}"

# ---- run ------------------------------------------------------------------------------------
say "ops_cuda_test"
set +e
"$BUILD_DIR/ops_cuda_test" 2>&1 | tee "$RESULTS_DIR/ops_cuda_test.log"
test_rc=${PIPESTATUS[0]}
set -e
if [[ $test_rc -eq 77 ]]; then
    say "no GPU visible: built everything, ran nothing (exit 77)"
    exit 77
fi
if [[ -z "${SKIP_BENCH:-}" ]]; then
    say "gemm_bench ${BENCH_ARGS:-}"
    # shellcheck disable=SC2086  # BENCH_ARGS is a list of flags
    "$BUILD_DIR/gemm_bench" ${BENCH_ARGS:-} 2>&1 | tee "$RESULTS_DIR/gemm_bench.txt"
fi
if [[ $test_rc -ne 0 ]]; then
    say "ops_cuda_test FAILED (exit $test_rc): see $RESULTS_DIR/ops_cuda_test.log"
    exit 1
fi
say "all CUDA kernels match their CPU twins"
