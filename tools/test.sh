#!/usr/bin/env bash
# test.sh — README command (2): set up, build everything, run the whole test suite.
# CUDA kernels are compiled and linked when nvcc is present; GPU tests (tag "gpu") are skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
source tools/mpi_env.sh
bazel build //...
bazel test //...
