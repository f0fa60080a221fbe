#!/usr/bin/env bash
# bundle.sh — pack the trident binary built here, with everything it needs that a bare GPU
# machine lacks, into one relocatable folder (default gpu_bundle/ at the repository root).
#
# The GPU machine has the CUDA toolkit and driver, gcc and bash, but no Bazel, Open MPI, Cairo,
# OpenBLAS or fontconfig. The bundle carries:
#
#   gpu_bundle/
#     env.sh            source it: PATH, LD_LIBRARY_PATH, OPAL_PREFIX, fonts, MPI settings
#     mpi_env.sh        a copy of tools/mpi_env.sh (the MCA settings of every script here)
#     bin/trident       the program
#     bin/<test>        the GPU-only programs Bazel builds here (EXTRA_TARGETS): the kernel
#                       test ops_cuda_test, the NCCL test comm_nccl_test, gemm_bench
#     lib/              every shared library trident and Open MPI resolve with ldd, except
#                       glibc and CUDA (the machine's own toolkit provides cuBLAS/cudart);
#                       libopenblas.so.0 re-linked from OpenBLAS's static archive with only
#                       the symbols trident imports (same code, 25 MB instead of 36)
#     lib/compat/       libstdc++, libgcc_s: used only where the machine's are too old
#     lib/glibc/        glibc + its loader: used only where the machine's glibc is older than
#                       the bundle needs, through the wrappers in glibc-bin/ (never on
#                       LD_LIBRARY_PATH: a libc must come with its own ld.so)
#     lib/nccl-stub/    a stand-in libnccl.so.2 whose calls fail with a message: lets trident
#                       load where NCCL is not installed (MPI staging never calls NCCL);
#                       used only when the machine has no libnccl.so.2
#     ompi/             Open MPI's runtime in its installed layout, relocated by OPAL_PREFIX:
#                       bin/ (mpirun, orted, ompi_info), the MCA plugins, help files, config
#     pmix/             the PMIx library's plugins and help files (Open MPI uses an external PMIx)
#     fonts/            fonts.conf + DejaVu Sans for the pictures Cairo draws
#     manifest.sh       versions the bundle needs (read by env.sh); MANIFEST.txt: file origins
#
# Not here: CUDA libraries (≈800 MB; the machine has them), network transports of Open MPI
# (UCX, OFI, PSM, verbs: one machine, shared memory only), OpenSHMEM.
#
# Usage: tools/gpu/bundle.sh [DIR]          (DIR default: gpu_bundle at the repository root)
# Environment: TRIDENT_BIN=path  use this binary instead of `bazel build //:trident`
#              EXTRA_TARGETS="..."  Bazel targets also packed into bin/ (default: the GPU tests
#                                and gemm_bench; "" for none); built only where nvcc is
#              STRIP=0           keep the libraries' symbol tables
#              SLIM_BLAS=0       copy libopenblas.so.0 whole instead of re-linking it
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
B="${1:-$ROOT/gpu_bundle}"
LIMIT_MIB=64
say() { printf '== %s\n' "$*"; }
die() { printf 'bundle.sh: %s\n' "$*" >&2; exit 1; }

for tool in ldd objdump ompi_info; do
    command -v "$tool" >/dev/null || die "needs $tool (run tools/setup.sh)"
done
# The GPU-only programs (they exist only in CUDA builds: tests/kernels_cuda/BUILD and friends).
EXTRA_TARGETS="${EXTRA_TARGETS-//tests/kernels_cuda:ops_cuda_test //tests/runtime:comm_nccl_test //tools/gpu:gemm_bench}"
command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]] || EXTRA_TARGETS=""
if [[ -z "${TRIDENT_BIN:-}" ]]; then
    say "bazel build //:trident $EXTRA_TARGETS"
    # shellcheck disable=SC2086  # a list of targets
    bazel build //:trident $EXTRA_TARGETS
    TRIDENT_BIN=bazel-bin/trident
elif [[ -n "$EXTRA_TARGETS" ]]; then
    # shellcheck disable=SC2086
    bazel build $EXTRA_TARGETS
fi
[[ -x "$TRIDENT_BIN" ]] || die "no executable at $TRIDENT_BIN"
EXTRA_BINS=()
for target in $EXTRA_TARGETS; do # //pkg/dir:name -> bazel-bin/pkg/dir/name
    path="bazel-bin/${target#//}"; path="${path/://}"
    [[ -x "$path" ]] || die "$target was built but $path is not there"
    EXTRA_BINS+=("$path")
done

# Start clean, but never delete a folder this script did not make.
if [[ -e "$B" ]]; then
    [[ -f "$B/MANIFEST.txt" || -z "$(ls -A "$B")" ]] || die "$B exists and is not a bundle; remove it yourself"
    rm -rf "$B"
fi
mkdir -p "$B"/{bin,lib/compat,lib/glibc,fonts/ttf}
B="$(cd "$B" && pwd)"
: > "$B/MANIFEST.txt"
note() { printf '%-52s <- %s\n' "${1#"$B"/}" "$2" >> "$B/MANIFEST.txt"; }

# ---- which libraries go where ----------------------------------------------------------------
# glibc: one libc must be used with its own loader, so it is never put on LD_LIBRARY_PATH.
is_glibc() { [[ "$1" =~ ^(libc|libm|libmvec|libpthread|libdl|librt|libresolv|libutil|libanl|libnsl)\.so|^ld-linux ]]; }
# CUDA: the GPU machine's own toolkit and driver (versions must match the driver there).
is_cuda() { [[ "$1" =~ ^lib(cuda|cudart|cublas|cublasLt|nccl|nvrtc|nvJitLink|cufft|curand|cusparse|cusolver|cudnn|nvidia-ml)[.-] || "$2" == /usr/local/cuda* ]]; }
is_compat() { [[ "$1" =~ ^(libstdc\+\+|libgcc_s)\.so ]]; }

declare -A COPIED=()
copy_lib() { # copy_lib NAME PATH: one resolved library, under the name the loader asks for
    local name="$1" path="$2" dir="$B/lib"
    is_cuda "$name" "$path" && return 0
    if is_glibc "$name"; then dir="$B/lib/glibc"; elif is_compat "$name"; then dir="$B/lib/compat"; fi
    [[ -n "${COPIED[$dir/$name]:-}" ]] && return 0
    cp -L "$path" "$dir/$name"
    chmod u+w "$dir/$name"
    COPIED[$dir/$name]=1
    note "$dir/$name" "$(readlink -f "$path")"
}
# ldd_deps FILE: "name path" of every library FILE resolves (transitively); fails on "not found"
ldd_deps() {
    local out
    out="$(LD_LIBRARY_PATH="$B/lib" ldd "$1")" || return 1
    if grep -q 'not found' <<<"$out"; then return 1; fi
    awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 } $1 ~ /^\/.*ld-linux/ { n = $1; sub(/.*\//, "", n); print n, $1 }' <<<"$out"
}
copy_deps() { # copy_deps FILE: all of FILE's libraries
    local name path
    while read -r name path; do copy_lib "$name" "$path"; done < <(ldd_deps "$1")
}

# ---- trident -----------------------------------------------------------------------------------
say "trident from $TRIDENT_BIN"
cp -L "$TRIDENT_BIN" "$B/bin/trident"; chmod 755 "$B/bin/trident"
note "$B/bin/trident" "$(readlink -f "$TRIDENT_BIN")"
ldd_deps "$B/bin/trident" >/dev/null || { ldd "$B/bin/trident" | grep 'not found'; die "trident has unresolved libraries"; }
BINS=("$B/bin/trident") ORIGINALS=("$TRIDENT_BIN")
for prog in "${EXTRA_BINS[@]}"; do
    cp -L "$prog" "$B/bin/"; chmod 755 "$B/bin/$(basename "$prog")"
    note "$B/bin/$(basename "$prog")" "$(readlink -f "$prog")"
    BINS+=("$B/bin/$(basename "$prog")") ORIGINALS+=("$prog")
    # Bazel links tests against its own shared libraries (found through $ORIGIN-relative run
    # paths): libraries are therefore read from the original, where those paths still work.
    ldd_deps "$prog" >/dev/null || { ldd "$prog" | grep 'not found'; die "$prog has unresolved libraries"; }
done
# Every ELF file whose imports decide the slim OpenBLAS: the programs and Bazel's libraries.
mapfile -t IMPORTERS < <(printf '%s\n' "${BINS[@]}"
    for prog in "${ORIGINALS[@]}"; do ldd_deps "$prog" | awk '$2 ~ /_solib/ { print $2 }'; done)
# OpenBLAS: Debian's libopenblas.so.0 is 36 MB (every BLAS/LAPACK routine for every CPU type).
# Linking its static archive with only the symbols trident imports keeps the same code (the
# same sgemm kernels, chosen for the CPU at run time) in ~25 MB and drops libgfortran.
# SLIM_BLAS=0 copies the shared library as it is.
BLAS_SO="$(ldd "$B/bin/trident" | awk '$1 ~ /^libopenblas\.so/ { print $1, $3; exit }')"
if [[ -n "$BLAS_SO" && "${SLIM_BLAS:-1}" != 0 ]]; then
    read -r BLAS_NAME BLAS_PATH <<<"$BLAS_SO"
    BLAS_REAL="$(readlink -f "$BLAS_PATH")"
    BLAS_A="${BLAS_REAL%.so*}.a"
    [[ -f "$BLAS_A" ]] || BLAS_A="$(dirname "$BLAS_REAL")/libopenblas.a"
    mapfile -t BLAS_SYMS < <(comm -12 <(for f in "${IMPORTERS[@]}"; do nm -D --undefined-only "$f"; done | awk '{print $2}' | sort -u) \
                                      <(nm -D --defined-only "$BLAS_REAL" | awk '{print $3}' | sort -u))
    if [[ -f "$BLAS_A" && ${#BLAS_SYMS[@]} -gt 0 ]]; then
        tmp="$(mktemp -d)"
        printf '{ global: %s local: *; };\n' "$(printf '%s; ' "${BLAS_SYMS[@]}")" > "$tmp/blas.map"
        echo 'void trident_bundle_blas(void) {}' > "$tmp/keep.c"
        if ${CC:-gcc} -shared -fPIC -o "$B/lib/$BLAS_NAME" -Wl,-soname,"$BLAS_NAME" -Wl,--gc-sections \
               -Wl,--version-script="$tmp/blas.map" "${BLAS_SYMS[@]/#/-Wl,--undefined=}" \
               "$tmp/keep.c" "$BLAS_A" -lgfortran -lpthread -lm 2>"$tmp/log"; then
            COPIED[$B/lib/$BLAS_NAME]=1
            note "$B/lib/$BLAS_NAME" "$BLAS_A, only ${BLAS_SYMS[*]} (SLIM_BLAS=0: the whole .so)"
            say "OpenBLAS: $BLAS_NAME linked from $(basename "$BLAS_A") with ${BLAS_SYMS[*]}"
        else
            cat "$tmp/log" >&2; say "OpenBLAS: slim link failed, copying the whole library"
            rm -f "$B/lib/$BLAS_NAME"
        fi
        rm -rf "$tmp"
    fi
fi
for prog in "${ORIGINALS[@]}"; do copy_deps "$prog"; done
objdump -p "$B/bin/trident" | grep -q 'NEEDED.*libcudart' \
    || say "WARNING: this trident was built without CUDA (no nvcc here?): --device cuda will not work"

# ---- Open MPI, in its installed layout below ompi/ ------------------------------------------------
# Open MPI 4.x finds everything from its configured paths; OPAL_PREFIX replaces the prefix in
# all of them. Paths that were configured outside the prefix (Debian: sysconfdir /etc/openmpi)
# get their own variable, OPAL_SYSCONFDIR.
ompi_path() { ompi_info --parsable --path "$1" | awk -F: -v k="$1" '$2 == k { sub(/^path:[^:]*:/, ""); print; exit }'; }
PREFIX="$(ompi_path prefix)"
rel() { # rel DIR: DIR below the prefix, or fail
    [[ "$1" == "$PREFIX"/* ]] || return 1
    printf '%s\n' "${1#"$PREFIX"/}"
}
BINDIR="$(ompi_path bindir)" PKGLIBDIR="$(ompi_path pkglibdir)"
PKGDATADIR="$(ompi_path pkgdatadir)" SYSCONFDIR="$(ompi_path sysconfdir)"
say "$(ompi_info --version | head -1) from prefix $PREFIX"
O="$B/ompi"
mkdir -p "$O/$(rel "$BINDIR")" "$O/$(rel "$PKGLIBDIR")" "$O/$(rel "$PKGDATADIR")"
# mpirun/mpiexec are links to orterun; copies, not links (carried folders may drop links).
ORTERUN="$(readlink -f "$(command -v mpirun)")"
for prog in mpirun mpiexec orterun; do
    cp "$ORTERUN" "$O/$(rel "$BINDIR")/$prog"; note "$O/$(rel "$BINDIR")/$prog" "$ORTERUN"
done
for prog in orted ompi_info; do
    cp -L "$BINDIR/$prog" "$O/$(rel "$BINDIR")/$prog"; note "$O/$(rel "$BINDIR")/$prog" "$BINDIR/$prog"
    copy_deps "$BINDIR/$prog"
done
copy_deps "$ORTERUN"
# MCA plugins: all but the network transports and OpenSHMEM.
SKIP_PLUGINS='(ucx|ofi|psm|psm2|openib|verbs|usnic|_(spml|sshmem|scoll|memheap|atomic)_)'
kept=0 skipped=()
for so in "$PKGLIBDIR"/*.so; do
    base="$(basename "$so")"
    if [[ "$base" =~ $SKIP_PLUGINS ]] || ! ldd_deps "$so" >/dev/null; then skipped+=("$base"); continue; fi
    cp "$so" "$O/$(rel "$PKGLIBDIR")/$base"
    copy_deps "$so"
    kept=$((kept + 1))
done
note "$O/$(rel "$PKGLIBDIR")/*.so ($kept)" "$PKGLIBDIR (left out: ${skipped[*]})"
cp -r "$PKGDATADIR"/. "$O/$(rel "$PKGDATADIR")/"; note "$O/$(rel "$PKGDATADIR")/" "$PKGDATADIR"
if OMPI_SYSCONF_REL="$(rel "$SYSCONFDIR")"; then OMPI_SYSCONF_SET=0; else OMPI_SYSCONF_REL=etc/openmpi OMPI_SYSCONF_SET=1; fi
mkdir -p "$O/$OMPI_SYSCONF_REL"
for f in openmpi-mca-params.conf openmpi-default-hostfile; do
    [[ -f "$SYSCONFDIR/$f" ]] && { cp "$SYSCONFDIR/$f" "$O/$OMPI_SYSCONF_REL/"; note "$O/$OMPI_SYSCONF_REL/$f" "$SYSCONFDIR/$f"; }
done
cp tools/mpi_env.sh "$B/mpi_env.sh"; note "$B/mpi_env.sh" tools/mpi_env.sh

# ---- PMIx (Debian's Open MPI uses the system's PMIx: its own plugins and help files) -------------
PMIX_LIB="$(ldd "$PKGLIBDIR"/mca_pmix_ext*.so 2>/dev/null | awk '$1 == "libpmix.so.2" { print $3; exit }')"
PMIX_ROOT=""
if [[ -n "$PMIX_LIB" ]]; then
    PMIX_ROOT="$(dirname "$(dirname "$(readlink -f "$PMIX_LIB")")")"   # .../pmix2 (lib/libpmix.so.2)
    mkdir -p "$B/pmix/lib/pmix" "$B/pmix/share/pmix"
    if [[ -d "$PMIX_ROOT/lib/pmix" ]]; then
        for so in "$PMIX_ROOT"/lib/pmix/*.so; do cp "$so" "$B/pmix/lib/pmix/"; copy_deps "$so"; done
        note "$B/pmix/lib/pmix/" "$PMIX_ROOT/lib/pmix"
    fi
    [[ -d "$PMIX_ROOT/share/pmix" ]] && { cp -r "$PMIX_ROOT/share/pmix/." "$B/pmix/share/pmix/"; note "$B/pmix/share/pmix/" "$PMIX_ROOT/share/pmix"; }
    # (Debian's pmix-mca-params.conf only names the plugin path; env.sh sets PMIX_PKGLIBDIR.)
fi

# ---- glibc for the fallback: the loader and the libraries next to it -----------------------------
loaders=("$B"/lib/glibc/ld-linux*)
LDSO="${loaders[0]}"
[[ -f "$LDSO" ]] || die "ldd named no ld-linux"
GLIBC_DIR="$(dirname "$(readlink -f /lib/x86_64-linux-gnu/libc.so.6 2>/dev/null || ldd "$B/bin/trident" | awk '$1=="libc.so.6"{print $3}')")"
for name in libc.so.6 libm.so.6 libmvec.so.1 libpthread.so.0 libdl.so.2 librt.so.1 libresolv.so.2 libutil.so.1; do
    [[ -e "$GLIBC_DIR/$name" ]] && copy_lib "$name" "$GLIBC_DIR/$name"
done
mkdir -p "$B/glibc-bin"
wrap() { # wrap NAME TARGET(relative to the bundle): a script that runs TARGET with the bundled glibc
    cat > "$B/glibc-bin/$1" <<EOF
#!/bin/sh
# Runs $2 with the bundle's glibc (env.sh puts this folder first on PATH only when the
# machine's glibc is older than the bundle needs). Generated by tools/gpu/bundle.sh.
b="\$(cd "\$(dirname "\$0")/.." && pwd)"
exec "\$b/lib/glibc/$(basename "$LDSO")" --library-path "\$TRIDENT_GLIBC_LIBRARY_PATH" "\$b/$2" "\$@"
EOF
    chmod 755 "$B/glibc-bin/$1"
}
for prog in "${BINS[@]}"; do wrap "$(basename "$prog")" "bin/$(basename "$prog")"; done
for prog in mpirun mpiexec orterun orted ompi_info; do wrap "$prog" "ompi/$(rel "$BINDIR")/$prog"; done

# ---- NCCL stand-in (only if trident links NCCL at all) --------------------------------------------
NCCL_SONAME="$(objdump -p "$B/bin/trident" | awk '$1 == "NEEDED" && $2 ~ /^libnccl/ { print $2 }')"
if [[ -n "$NCCL_SONAME" ]]; then
    say "trident links $NCCL_SONAME: building the stand-in lib/nccl-stub/$NCCL_SONAME"
    mkdir -p "$B/lib/nccl-stub"
    {
        echo '/* stand-in for NCCL, generated by tools/gpu/bundle.sh: every call fails with a hint. */'
        echo '#include <stdio.h>'
        echo 'static int fail(const char *f) { fprintf(stderr, "trident bundle: %s called, but NCCL is not installed on this machine (lib/nccl-stub stands in); use MPI staging or install NCCL\n", f); return 5; /* ncclInvalidUsage */ }'
        echo 'const char *ncclGetErrorString(int r) { (void)r; return "NCCL is not installed on this machine (trident bundle stand-in)"; }'
        nm -D --undefined-only "$B/bin/trident" | awk '$2 ~ /^nccl/ && $2 != "ncclGetErrorString" { printf "int %s(void) { return fail(\"%s\"); }\n", $2, $2 }'
    } > "$B/lib/nccl-stub/nccl_stub.c"
    ${CC:-gcc} -shared -fPIC -O1 -Wl,-soname,"$NCCL_SONAME" -o "$B/lib/nccl-stub/$NCCL_SONAME" "$B/lib/nccl-stub/nccl_stub.c"
    note "$B/lib/nccl-stub/$NCCL_SONAME" "generated from nccl_stub.c"
fi

# ---- fonts: Cairo draws text through fontconfig ---------------------------------------------------
for face in DejaVuSans DejaVuSans-Bold; do
    style=Book; [[ "$face" == *-Bold ]] && style=Bold
    ttf="$(fc-match -f '%{file}' "DejaVu Sans:style=$style" 2>/dev/null || true)"
    [[ "$(basename "$ttf")" == "$face.ttf" ]] || ttf="/usr/share/fonts/truetype/dejavu/$face.ttf"
    [[ -f "$ttf" ]] || die "no $face.ttf: apt-get install fonts-dejavu-core"
    cp "$ttf" "$B/fonts/ttf/"; note "$B/fonts/ttf/$(basename "$ttf")" "$ttf"
done
cat > "$B/fonts/fonts.conf" <<'EOF'
<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">
<!-- The trident bundle's fonts: only the folder next to this file (relocatable). -->
<fontconfig>
  <dir prefix="relative">ttf</dir>
  <cachedir prefix="xdg">fontconfig</cachedir>
  <alias><family>sans-serif</family><prefer><family>DejaVu Sans</family></prefer></alias>
</fontconfig>
EOF

# ---- no symbolic links (a carried folder may drop them): each becomes a copy of its target ------
find "$B" -type l -exec sh -c 't="$(readlink -f "$1")"; rm "$1"; [ -f "$t" ] && cp "$t" "$1"; exit 0' _ {} \;

# ---- strip the copies ---------------------------------------------------------------------------
if [[ "${STRIP:-1}" != 0 ]] && command -v strip >/dev/null; then
    before="$(du -sk "$B" | cut -f1)"
    find "$B/lib" "$B/ompi" "$B/pmix" -type f -name '*.so*' -exec strip --strip-unneeded {} + 2>/dev/null || true
    say "strip --strip-unneeded: $before KiB -> $(du -sk "$B" | cut -f1) KiB"
fi

# ---- what the bundle needs of the machine (env.sh checks it) -------------------------------------
CUDA_SONAMES="$(for f in "${BINS[@]}"; do objdump -p "$f"; done | awk '$1 == "NEEDED" { print $2 }' \
    | while read -r n; do if is_cuda "$n" ""; then echo "$n"; fi; done | sort -u | tr '\n' ' ')"
max_version() { # max_version PREFIX FILES...: highest PREFIX<version> the files import
    local p="$1"; shift
    for f in "$@"; do objdump -T "$f" 2>/dev/null | awk '/\*UND\*/'; done \
        | { grep -o "${p}[0-9.]*[0-9]" || true; } | sed "s/^$p//" | sort -uV | tail -1
}
mapfile -t ELFS < <(find "$B/bin" "$B/lib" "$B/ompi" "$B/pmix" -path "$B/lib/glibc" -prune -o -type f -print \
    | while read -r f; do [[ "$(head -c4 "$f" | od -An -c | tr -d ' ')" == '177ELF' ]] && echo "$f"; done)
GLIBC_NEED="$(max_version GLIBC_ "${ELFS[@]}")"
GLIBCXX_NEED="$(max_version GLIBCXX_ "${ELFS[@]}")"
cat > "$B/manifest.sh" <<EOF
# manifest.sh — what this bundle needs of the machine; generated by tools/gpu/bundle.sh, read by env.sh.
TB_BUILT="$(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-?}"), glibc $(getconf GNU_LIBC_VERSION | awk '{print $2}')"
TB_GLIBC_NEED="${GLIBC_NEED}"
TB_GLIBCXX_NEED="${GLIBCXX_NEED}"
TB_LDSO="$(basename "$LDSO")"
TB_NCCL_SONAME="${NCCL_SONAME}"
TB_CUDA_SONAMES="${CUDA_SONAMES}"
TB_OMPI_SYSCONF_REL="${OMPI_SYSCONF_REL}"
TB_OMPI_SYSCONF_SET=${OMPI_SYSCONF_SET}
TB_OMPI_PKGLIB_REL="$(rel "$PKGLIBDIR")"
TB_OMPI_BIN_REL="$(rel "$BINDIR")"
EOF

# ---- env.sh ---------------------------------------------------------------------------------------
cat > "$B/env.sh" <<'EOF'
# env.sh — `source gpu_bundle/env.sh` (bash): makes the bundled trident and Open MPI usable from
# wherever this folder lies. Generated by tools/gpu/bundle.sh; see tools/gpu/README.md.
#
#   PATH             bin/ (trident), ompi/bin (mpirun); glibc-bin/ first in glibc fallback mode
#   LD_LIBRARY_PATH  lib/ [, lib/compat] , $CUDA_HOME/lib64 [, lib/nccl-stub]
#   OPAL_PREFIX      ompi/ (Open MPI finds plugins, help files, config under it)
#   FONTCONFIG_FILE  fonts/fonts.conf (DejaVu Sans for the pictures)
#   mpi_env.sh       root allowed, shared memory only, no binding, oversubscription
#
# Optional: CUDA_HOME (default /usr/local/cuda); TRIDENT_BUNDLE_GLIBC=1 or 0 forces the glibc
# fallback on or off (default: on only when this machine's glibc is older than the bundle needs);
# TRIDENT_BUNDLE_NCCL_STUB=1 or 0 likewise for the NCCL stand-in (default: when none is found).
# Prints nothing unless something is missing; `trident_bundle_info` prints what it decided.
TRIDENT_BUNDLE="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)"
export TRIDENT_BUNDLE
. "$TRIDENT_BUNDLE/manifest.sh"
_tb_cuda="${CUDA_HOME:-/usr/local/cuda}"
_tb_cudalib="$_tb_cuda/lib64"; [ -d "$_tb_cudalib" ] || _tb_cudalib="$_tb_cuda/lib"
[ -d "$_tb_cudalib" ] || echo "env.sh: no CUDA libraries at $_tb_cudalib (set CUDA_HOME); --device cuda will not load" >&2
_tb_syslib() { # the machine's own copy of a library, if any
    local d
    for d in "$_tb_cudalib" /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib64 /usr/lib64 /usr/local/lib; do
        [ -e "$d/$1" ] && { echo "$d/$1"; return 0; }
    done
    { /sbin/ldconfig -p 2>/dev/null || /usr/sbin/ldconfig -p 2>/dev/null; } | awk -v n="$1" '$1 == n { print $NF; f = 1; exit } END { exit !f }'
}
_tb_older() { [ "$1" != "$2" ] && [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -1)" = "$1" ]; }

# glibc: the bundle's libraries were built against TB_GLIBC_NEED; an older machine gets them
# through the bundled loader (glibc-bin/ wrappers), never through LD_LIBRARY_PATH.
_tb_glibc="$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')"
TRIDENT_BUNDLE_GLIBC="${TRIDENT_BUNDLE_GLIBC:-}"
if [ -z "$TRIDENT_BUNDLE_GLIBC" ]; then
    TRIDENT_BUNDLE_GLIBC=0
    if [ -n "$TB_GLIBC_NEED" ] && { [ -z "$_tb_glibc" ] || _tb_older "$_tb_glibc" "$TB_GLIBC_NEED"; }; then
        TRIDENT_BUNDLE_GLIBC=1
    fi
fi
export TRIDENT_BUNDLE_GLIBC

# libstdc++/libgcc_s: the machine's when it has the newest GLIBCXX_ version the bundle imports.
_tb_compat=""
_tb_stdcxx="$(_tb_syslib libstdc++.so.6 || true)"
if [ "$TRIDENT_BUNDLE_GLIBC" = 1 ] || [ -z "$_tb_stdcxx" ] \
   || { [ -n "$TB_GLIBCXX_NEED" ] && ! grep -qa "GLIBCXX_$TB_GLIBCXX_NEED" "$_tb_stdcxx"; }; then
    _tb_compat="$TRIDENT_BUNDLE/lib/compat:"
fi
# CUDA libraries the programs link (cuBLAS, cudart, NCCL): the toolkit's or the system's;
# where one is missing, the copy Python's NVIDIA wheels carry (site-packages/nvidia/*/lib:
# PyTorch images often have NCCL only there). Their folders come after the toolkit's.
_tb_wheels=""
_tb_wheel_dirs() {
    local p
    for p in /opt/*/.venv/lib/python3*/site-packages /usr/local/lib/python3*/dist-packages \
             /usr/local/lib/python3*/site-packages /usr/lib/python3/dist-packages \
             $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
        [ -d "$p/nvidia" ] && ls -d "$p"/nvidia/*/lib 2>/dev/null
    done | awk '!seen[$0]++'
}
for _tb_so in $TB_CUDA_SONAMES; do
    _tb_syslib "$_tb_so" >/dev/null && continue
    for _tb_d in $(_tb_wheel_dirs); do
        [ -e "$_tb_d/$_tb_so" ] || continue
        case ":$_tb_wheels:" in *":$_tb_d:"*) ;; *) _tb_wheels="$_tb_wheels:$_tb_d" ;; esac
        break
    done
done
_tb_has() { # _tb_has NAME: the machine, or one of the wheel folders chosen above, has NAME
    _tb_syslib "$1" >/dev/null && return 0
    local d
    for d in $(printf '%s' "$_tb_wheels" | tr ':' ' '); do [ -e "$d/$1" ] && return 0; done
    return 1
}
# NCCL: the machine's when it has one; otherwise the stand-in (last, so a real one always wins).
_tb_nccl=""
if [ -n "$TB_NCCL_SONAME" ] && [ "${TRIDENT_BUNDLE_NCCL_STUB:-}" != 0 ] \
   && { [ "${TRIDENT_BUNDLE_NCCL_STUB:-}" = 1 ] || ! _tb_has "$TB_NCCL_SONAME"; }; then
    _tb_nccl=":$TRIDENT_BUNDLE/lib/nccl-stub"
fi
_tb_libs="$TRIDENT_BUNDLE/lib:$_tb_compat$_tb_cudalib$_tb_wheels$_tb_nccl"

export OPAL_PREFIX="$TRIDENT_BUNDLE/ompi"
[ "$TB_OMPI_SYSCONF_SET" = 1 ] && export OPAL_SYSCONFDIR="$OPAL_PREFIX/$TB_OMPI_SYSCONF_REL"
# PMIx (used by Open MPI, installed apart from it) has no prefix variable that works here;
# its directories are set one by one (its sysconfdir holds no file: nothing to override).
if [ -d "$TRIDENT_BUNDLE/pmix" ]; then
    export PMIX_PKGLIBDIR="$TRIDENT_BUNDLE/pmix/lib/pmix"
    export PMIX_PKGDATADIR="$TRIDENT_BUNDLE/pmix/share/pmix"
    export PMIX_SYSCONFDIR="$TRIDENT_BUNDLE/pmix/share"
fi
# hwloc plugins (PCI, OpenCL, GL discovery) are not carried: none of them, on any machine.
export HWLOC_PLUGINS_PATH="$TRIDENT_BUNDLE/lib/hwloc"
export FONTCONFIG_FILE="$TRIDENT_BUNDLE/fonts/fonts.conf"
. "$TRIDENT_BUNDLE/mpi_env.sh"

if [ "$TRIDENT_BUNDLE_GLIBC" = 1 ]; then
    # The wrappers pass this path to the bundled ld.so; LD_LIBRARY_PATH stays the machine's so
    # that its own programs (bash, awk, nvidia-smi) keep their own libc.
    export TRIDENT_GLIBC_LIBRARY_PATH="$TRIDENT_BUNDLE/lib/glibc:$_tb_libs"
    export PATH="$TRIDENT_BUNDLE/glibc-bin:$TRIDENT_BUNDLE/bin:$OPAL_PREFIX/$TB_OMPI_BIN_REL:$PATH"
else
    export LD_LIBRARY_PATH="$_tb_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export PATH="$TRIDENT_BUNDLE/bin:$OPAL_PREFIX/$TB_OMPI_BIN_REL:$PATH"
fi

trident_bundle_info() {
    echo "bundle:        $TRIDENT_BUNDLE ($TB_BUILT)"
    echo "glibc:         machine ${_tb_glibc:-?}, bundle needs $TB_GLIBC_NEED -> fallback through the bundled ld.so: $TRIDENT_BUNDLE_GLIBC"
    if [ -n "$_tb_compat" ]; then echo "libstdc++:     bundled (lib/compat)"; else echo "libstdc++:     the machine's, $_tb_stdcxx"; fi
    echo "CUDA libs:     $_tb_cudalib${_tb_wheels:+, then from Python wheels $_tb_wheels}"
    echo "NCCL:          ${TB_NCCL_SONAME:-not linked}${_tb_nccl:+ -> stand-in (lib/nccl-stub), NCCL calls fail}"
    echo "OPAL_PREFIX:   $OPAL_PREFIX"
    echo "trident:       $(command -v trident)"
    echo "mpirun:        $(command -v mpirun)"
}
EOF

# ---- size ---------------------------------------------------------------------------------------
kib="$(du -sk "$B" | cut -f1)"
say "bundle: $B"
du -sh "$B"/bin "$B"/lib "$B"/lib/compat "$B"/lib/glibc "$B"/ompi "$B"/pmix "$B"/fonts 2>/dev/null | sed 's/^/   /'
printf '== bundle size: %d.%d MiB (%d KiB; carry limit %d MiB); needs glibc >= %s, GLIBCXX %s\n' \
    $((kib / 1024)) $((kib % 1024 * 10 / 1024)) "$kib" "$LIMIT_MIB" "$GLIBC_NEED" "${GLIBCXX_NEED:-(none)}"
(( kib < LIMIT_MIB * 1024 * 9 / 10 )) || die "bundle is $kib KiB: over 90% of the $LIMIT_MIB MiB carry limit"
say "use: source $B/env.sh && trident --help"
