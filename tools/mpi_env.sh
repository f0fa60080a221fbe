# mpi_env.sh — how Open MPI runs on these machines: the one source. Scripts source it; the
# tests (tests/support: test_mpi_setenv, test_mpirun_prefix) and `trident bench` compile it in
# through //tools:mpi_env (a genrule reads the `export` lines below, so keep them one per line,
# as NAME=VALUE, or NAME=${NAME:-VALUE} to let the caller's value win).
# Root is allowed (containers run as root), only the shared-memory transport (no network),
# no core binding (8 ranks share 2 cores). The shared-memory single-copy mechanism is left to
# trident (src/runtime/dist.h): it probes CMA and sets OMPI_MCA_btl_vader_single_copy_mechanism
# itself; set it here only to force a choice.
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader}
export OMPI_MCA_hwloc_base_binding_policy=${OMPI_MCA_hwloc_base_binding_policy:-none}
export OMPI_MCA_rmaps_base_oversubscribe=1
