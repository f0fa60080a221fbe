#!/usr/bin/env bash
# demo.sh — README command (1): set up, build, and train a small GPT with 3D parallelism on CPU:
# 8 MPI ranks = tensor 2 × pipeline 2 × data 2, interleaved 1F1B (2 model chunks per rank),
# ZeRO-1 distributed optimizer. Ends with the timeline (PNG + Chrome JSON), the process groups
# and the ZeRO buffer pictures in runs/demo/. Extra flags are passed to `trident train`.
# TRIDENT_BIN=path skips the set-up and the build (the CI test of the demo uses it).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${TRIDENT_BIN:-}" ]; then
    bash tools/setup.sh
    bazel build //:trident
    TRIDENT_BIN=bazel-bin/trident
fi
source tools/mpi_env.sh
RUN_DIR=${RUN_DIR:-runs/demo}
mpirun -np 8 --oversubscribe "$TRIDENT_BIN" train \
    --tensor-model-parallel-size 2 \
    --pipeline-model-parallel-size 2 \
    --num-layers-per-virtual-pipeline-stage 1 \
    --use-distributed-optimizer \
    --run-dir "$RUN_DIR" \
    "$@"
