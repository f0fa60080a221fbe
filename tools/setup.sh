#!/usr/bin/env bash
# setup.sh — installs, from Debian's archive, whatever Trident needs and is missing.
# Idempotent: a machine that has everything is left alone (no apt-get at all).
set -euo pipefail

need=()
have() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for pkg in bazel-bootstrap gcc g++ libc6-dev openmpi-bin libopenmpi-dev libopenblas-dev \
           libcairo2-dev libcmocka-dev fonts-dejavu-core python3 ca-certificates fortunes \
           clang-format iproute2 util-linux; do
    have "$pkg" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
    echo "setup: installing ${need[*]}"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# Open MPI refuses to run as root unless told; the machines here run everything as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
