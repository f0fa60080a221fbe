#!/bin/bash
# cluster.sh — a simulated cluster on this machine: N hosts that Open MPI sees as N nodes.
#
#   bash tools/cluster.sh up N [--skew S] [--link-rate RATE] [--slots K]
#   bash tools/cluster.sh down
#   bash tools/cluster.sh status
#
# Each host is a sleeping process in its own namespaces (util-linux `unshare`, iproute2):
#   UTS      its own host name, nodeK (K = 1..N), so Open MPI counts N nodes and never uses
#            shared memory or single copy (CMA) between them;
#   network  its own interface eth0, 10.77.0.K/24, a veth pair into the bridge trbr0 of this
#            machine (10.77.0.254): every byte between hosts crosses TCP over that link;
#   time     CLOCK_MONOTONIC offset by (K−1)·S seconds (a time namespace), so the hosts'
#            clocks really disagree — what Trident's clock alignment must measure.
# --link-rate RATE (tc's units: 100mbit, 1gbit) limits every host's link, both ways, with a
# token bucket (tc tbf; this kernel has no netem). --slots K: ranks per host (default 2).
#
# mpirun reaches the hosts through Open MPI's own remote launch: a plm_rsh_agent script that
# enters the host's namespaces instead of ssh, and a hostfile. `up` ends with one line,
#   launch: mpirun --hostfile ... (options)
# the prefix to put before `-np N trident ...`. Everything lives in $TRIDENT_CLUSTER_DIR
# (default /tmp/trident-cluster); `down` kills the hosts and removes the links and the bridge.
# Needs root; where the kernel refuses a namespace, `up` says which and exits 3 (tests skip,
# saying so).
set -euo pipefail
dir=${TRIDENT_CLUSTER_DIR:-/tmp/trident-cluster}
bridge=trbr0
net=10.77.0

die() { echo "cluster.sh: $*" >&2; exit 2; }
refuse() { echo "cluster.sh: cannot simulate hosts here: $*" >&2; exit 3; }

down() {
    if [ -f "$dir/pids" ]; then
        while read -r pid; do kill "$pid" 2>/dev/null || true; done <"$dir/pids"
    fi
    for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep '^trv' || true); do
        ip link del "$link" 2>/dev/null || true
    done
    ip link del "$bridge" 2>/dev/null || true
    rm -rf "$dir"
}

# The namespaces this kernel lets root make, tried once before anything is set up.
probe() {
    [ "$(id -u)" = 0 ] || refuse "not root (namespaces, veth pairs and tc need root)"
    for tool in unshare nsenter ip tc; do
        command -v "$tool" >/dev/null || refuse "'$tool' is missing (apt-get install util-linux iproute2)"
    done
    unshare --uts --net --time --monotonic 1 --fork true 2>/dev/null ||
        refuse "unshare --uts --net --time failed (no user/time namespaces in this kernel or container)"
    ip link add trprobe0 type veth peer name trprobe1 2>/dev/null ||
        refuse "ip link add ... type veth failed (no veth pairs)"
    ip link del trprobe0
    ip link add trprobe2 type bridge 2>/dev/null || refuse "ip link add ... type bridge failed (no bridges)"
    ip link del trprobe2
    tc qdisc show >/dev/null 2>&1 || refuse "tc does not work here (iproute2's traffic control)"
}

# host K SKEW: starts host K; prints the pid whose namespaces are the host's.
start_host() {
    local k=$1 skew=$2
    setsid unshare --uts --net --time --monotonic "$skew" --fork \
        sh -c "hostname node$k; exec sleep infinity" </dev/null >/dev/null 2>&1 &
    local holder=$! pid=""
    for _ in $(seq 50); do
        pid=$(pgrep -P "$holder" || true)
        [ -n "$pid" ] && break
        sleep 0.1
    done
    [ -n "$pid" ] || refuse "host $k did not start"
    echo "$holder" >>"$dir/pids"
    echo "$pid"
}

# link K PID RATE: the host's eth0 in its network namespace, its peer in the bridge.
link_host() {
    local k=$1 pid=$2 rate=$3
    ip link add "trv$k" type veth peer name "trp$k"
    ip link set "trp$k" netns "$pid"
    ip link set "trv$k" master "$bridge" up
    nsenter -t "$pid" --net sh -c "ip link set trp$k name eth0 && ip addr add $net.$k/24 dev eth0 &&
        ip link set eth0 up && ip link set lo up"
    if [ -n "$rate" ]; then
        tc qdisc add dev "trv$k" root tbf rate "$rate" burst 64kb latency 100ms
        nsenter -t "$pid" --net tc qdisc add dev eth0 root tbf rate "$rate" burst 64kb latency 100ms
    fi
}

up() {
    local n="" skew=0 rate="" slots=2
    while [ $# -gt 0 ]; do
        case "$1" in
        --skew) [ $# -ge 2 ] || die "--skew needs S (seconds)"; skew=$2; shift ;;
        --link-rate) [ $# -ge 2 ] || die "--link-rate needs RATE (e.g. 100mbit)"; rate=$2; shift ;;
        --slots) [ $# -ge 2 ] || die "--slots needs K"; slots=$2; shift ;;
        -*) die "unknown option '$1' (--skew S, --link-rate RATE, --slots K)" ;;
        *) [ -z "$n" ] || die "one N only (got '$n' and '$1')"; n=$1 ;;
        esac
        shift
    done
    [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 16 ] || die "N must be a number of hosts in 1..16, got '${n}'"
    [[ "$skew" =~ ^[0-9]+$ ]] && [ "$skew" -le 100 ] || die "--skew must be whole seconds in 0..100, got '$skew'"
    [[ "$slots" =~ ^[0-9]+$ ]] && [ "$slots" -ge 1 ] && [ "$slots" -le 16 ] || die "--slots must be in 1..16, got '$slots'"
    [ -z "$rate" ] || [[ "$rate" =~ ^[0-9]+(kbit|mbit|gbit)$ ]] || die "--link-rate must look like 100mbit (kbit, mbit, gbit), got '$rate'"
    probe
    down
    mkdir -p "$dir"
    ip link add "$bridge" type bridge
    ip addr add "$net.254/24" dev "$bridge"
    ip link set "$bridge" up
    : >"$dir/hostfile"
    for k in $(seq "$n"); do
        local pid
        pid=$(start_host "$k" $(((k - 1) * skew)))
        echo "$pid" >"$dir/node$k.pid"
        link_host "$k" "$pid" "$rate"
        echo "node$k slots=$slots" >>"$dir/hostfile"
    done
    # Open MPI's remote launch: `agent HOST COMMAND...` runs COMMAND in HOST's namespaces.
    cat >"$dir/agent" <<EOF
#!/bin/sh
# plm_rsh_agent of the simulated cluster (tools/cluster.sh): enters host \$1's namespaces.
host=\$1; shift
pid=\$(cat "$dir/\$host.pid") || { echo "cluster agent: no host \$host" >&2; exit 1; }
exec nsenter -t "\$pid" --uts --net --time=/proc/\$pid/ns/time_for_children -- /bin/sh -c "\$*"
EOF
    chmod +x "$dir/agent"
    printf '%s\n' "--hostfile $dir/hostfile --mca plm_rsh_agent $dir/agent --mca btl tcp,vader,self --mca btl_tcp_if_include $net.0/24 --mca oob_tcp_if_include $net.0/24" >"$dir/launch"
    echo "cluster: $n hosts node1..node$n ($net.1..$net.$n), clocks +$skew s apart, ${rate:-unlimited} links, $slots slots each"
    echo "launch: mpirun $(cat "$dir/launch")"
}

case "${1:-}" in
up) shift; up "$@" ;;
down) down; echo "cluster: down" ;;
status) [ -f "$dir/hostfile" ] && { cat "$dir/hostfile"; echo "launch: mpirun $(cat "$dir/launch")"; } || echo "cluster: not up" ;;
*) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
