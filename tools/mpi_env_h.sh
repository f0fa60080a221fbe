#!/bin/sh
# mpi_env_h.sh MPI_ENV_SH — writes tools/mpi_env.sh as a C header of MPI_ENV_VAR(name, value,
# keep_user) lines on stdout: `export X=${X:-v}` gives keep_user 1 (the caller's value wins),
# `export X=v` gives 0. The one translation: the genrule //tools:mpi_env_h and
# tools/gpu/run_gpu_checks.sh (builds without Bazel) both call it.
echo '/* generated from tools/mpi_env.sh by tools/mpi_env_h.sh; do not edit */'
sed -n -e 's/^export \([A-Za-z_0-9]*\)=\${\1:-\(.*\)}$/MPI_ENV_VAR("\1", "\2", 1)/p' \
    -e t -e 's/^export \([A-Za-z_0-9]*\)=\(.*\)$/MPI_ENV_VAR("\1", "\2", 0)/p' "$1"
