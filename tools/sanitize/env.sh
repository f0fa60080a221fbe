#!/usr/bin/env bash
# env.sh — runs a test binary with the sanitizer options of `bazel test --config=asan`.
#
# .bazelrc runs every test of the asan config under this script (--run_under). It exports
#   ASAN_OPTIONS   protect_shadow_gap=0 (the CUDA runtime maps memory where ASan would put
#                  its guard), leak checking on, stop at the first error, and full stacks
#                  for every allocation (fast_unwind_on_malloc=0: system libraries have no
#                  frame pointers, and a leak's stack must reach the library to match)
#   LSAN_OPTIONS   the suppressions in lsan.supp: leaks inside libmpi, libopen-pal, hwloc,
#                  fontconfig, cairo, glib and friends — never ones from Trident's own code
#   UBSAN_OPTIONS  a stack trace and a non-zero exit for any undefined behaviour
#   OMPI_MCA_mca_base_component_disable_dlclose=1
#                  Open MPI keeps its plugins loaded at exit, so a leak inside one still has
#                  a module name LSan can match (else: "<unknown module>")
# and executes "$@". Under mpirun the ranks inherit these variables.
#
# Not here: the compiler flags (.bazelrc, build:asan lines).
set -euo pipefail

here="$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")"
supp="${BASH_SOURCE[0]}.runfiles/trident/tools/sanitize/lsan.supp"
[[ -f "$supp" ]] || supp="$here/lsan.supp"
supp="$(readlink -f "$supp")"

export ASAN_OPTIONS="protect_shadow_gap=0:detect_leaks=1:halt_on_error=1:fast_unwind_on_malloc=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export OMPI_MCA_mca_base_component_disable_dlclose=1
exec "$@"
