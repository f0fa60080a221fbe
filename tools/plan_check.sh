#!/usr/bin/env bash
# plan_check.sh — `trident plan`'s predicted step time against measured runs, in the replay view
# (src/trace/replay.h: each rank as if on its own core, what the time model predicts; on a
# shared 2-core machine the wall clock of even 2 ranks counts other processes' time).
#
#   tools/plan_check.sh NP "LAYOUT FLAGS" ...       (flags exactly as `trident plan` prints them)
#
# Needs a calibration (trident plan --calibrate --world-size NP). Prints one line per layout
# (measured = the last of 4 steps, replayed) and the median and worst |error| and Spearman's
# rank correlation. TRIDENT_BIN overrides bazel-bin/trident; RUN_ROOT the scratch directory;
# MODEL the model's flags, given to both plan and train (e.g. "--num-experts 4").
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/mpi_env.sh
BIN=${TRIDENT_BIN:-bazel-bin/trident}
ROOT=${RUN_ROOT:-/tmp/plan_check}
NP=$1
shift
mkdir -p "$ROOT"
MODEL=${MODEL:-}
# shellcheck disable=SC2086
"$BIN" plan --world-size "$NP" $MODEL --top 1000000 > "$ROOT/plan$NP.txt"
: > "$ROOT/pairs$NP.txt"
for f in "$@"; do
    d="$ROOT/np$NP-$(echo "$MODEL $f" | tr -c 'a-z0-9' '_' | cut -c1-120)"
    rm -rf "$d"
    # shellcheck disable=SC2086
    mpirun -np "$NP" --oversubscribe "$BIN" train $MODEL $f --train-iters 4 --log-interval 1 \
        --eval-iters 0 --run-dir "$d" > "$d.log" 2>&1
    "$BIN" render "$d" -o "$d/replay.txt" --replay > /dev/null
    meas=$(head -1 "$d/replay.txt" | sed -n 's/.*step [0-9]*, \([0-9.]*\) ms.*/\1/p')
    key="$f"
    [ -z "$key" ] && key="(no flags: one rank's layout)"
    pred=$(awk -v k="$key" 'NR > 2 { s = ""; for (i = 8; i <= NF; i++) s = s (i > 8 ? " " : "") $i;
                                      if (s == k) { print $3; exit } }' "$ROOT/plan$NP.txt")
    echo "$pred $meas $f" >> "$ROOT/pairs$NP.txt"
    printf '%d ranks  predicted %8s ms  measured %8s ms  %s\n' "$NP" "$pred" "$meas" "$f"
done
python3 - "$ROOT/pairs$NP.txt" <<'PY'
import sys
rows = [l.split(None, 2) for l in open(sys.argv[1]) if l.strip()]
p = [float(r[0]) for r in rows]; m = [float(r[1]) for r in rows]
err = sorted(abs(a - b) / b for a, b in zip(p, m))
def ranks(x):
    o = sorted(range(len(x)), key=lambda i: x[i]); r = [0] * len(x)
    for k, i in enumerate(o): r[i] = k
    return r
rp, rm, n = ranks(p), ranks(m), len(p)
rho = 1 - 6 * sum((a - b) ** 2 for a, b in zip(rp, rm)) / (n * (n * n - 1)) if n > 1 else 1
best_p = min(range(n), key=lambda i: p[i]); best_m = min(m)
print(f"{n} layouts: median |error| {100 * err[n // 2]:.1f}%, worst {100 * err[-1]:.1f}%, "
      f"Spearman {rho:.2f}; predicted best measured {m[best_p]:.2f} ms vs measured best {best_m:.2f} ms")
PY
