#!/bin/bash
# figures.sh — regenerates every figure a parallelism course uses, in the default theme (for
# handouts and the web) and the slides theme (for a projector and grey-scale print).
#
#   bash tutorials/figures.sh OUTDIR              every figure (about 5 minutes on 2 cores)
#   bash tutorials/figures.sh --quick OUTDIR      every kind of figure from smaller runs, PNG
#                                                 only (about a minute; CI runs it)
#   options: --trident PATH (default bazel-bin/trident, built if missing)
#
# Writes OUTDIR/default/NAME.png + .svg, OUTDIR/slides/NAME.png + .svg (+ schedule-1f1b.pdf),
# OUTDIR/runs/ (the measured runs the pictures come from) and OUTDIR/FIGURES.md (what each
# figure shows and the command that drew it). The figures:
#   groups-*        process groups of a layout (trident groups)
#   schedule-*      a pipeline schedule as predicted: gpipe, 1f1b, interleaved, zb-h1, and the
#                   V-shaped zbv and dualpipev (trident schedule: the action lists, simulated)
#   measured-*      the same schedules measured: a short training run under mpirun, its last
#                   step re-timed as if each rank had its own core (trident render --replay)
#   compare-*       the measured schedules stacked on one time scale
#   memory-*        activation memory in use, GPipe above 1F1B (the rows under each rank)
#   zero-*          the ZeRO-1 buffer cut into data-parallel shards (trident train --draw-zero)
#   loss-*          loss curves of one model at several layouts, overlaid (render --metrics)
# Runs use 2 to 4 ranks with --oversubscribe, CPU only: a student laptop reproduces them.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
trident="" quick=0 out=""
while [ $# -gt 0 ]; do
    case "$1" in
    --quick) quick=1 ;;
    --trident)
        [ $# -ge 2 ] || { echo "figures.sh: --trident needs a PATH" >&2; exit 2; }
        trident=$2
        shift
        ;;
    -h | --help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "figures.sh: unknown option '$1' (--quick, --trident PATH, --help)" >&2; exit 2 ;;
    *)
        [ -z "$out" ] || { echo "figures.sh: one OUTDIR only (got '$out' and '$1')" >&2; exit 2; }
        out=$1
        ;;
    esac
    shift
done
[ -n "$out" ] || { echo "figures.sh: OUTDIR is required (bash tutorials/figures.sh OUTDIR)" >&2; exit 2; }
if [ -z "$trident" ]; then
    trident=$here/bazel-bin/trident
    [ -x "$trident" ] || (cd "$here" && bazel build --jobs 2 //:trident >/dev/null)
fi
[ -x "$trident" ] || { echo "figures.sh: '$trident' is not an executable trident" >&2; exit 2; }
trident=$(cd "$(dirname "$trident")" && pwd)/$(basename "$trident")
exts="png svg"
[ $quick = 1 ] && exts=png
mkdir -p "$out/default" "$out/slides" "$out/runs"
out=$(cd "$out" && pwd)
cd "$out" # run directories are named runs/NAME in the pictures' titles
# shellcheck source=/dev/null
source "$here/tools/mpi_env.sh"
log=$out/figures.log
: >"$log"
index=$out/FIGURES.md.tmp
printf '# Course figures\n\nRegenerate: `bash tutorials/figures.sh%s OUTDIR`. Each figure is in default/ and slides/ (%s).\n\n| figure | what it shows | drawn by |\n|---|---|---|\n' \
    "$([ $quick = 1 ] && echo ' --quick')" "$exts" >"$index"
step=0
say() { step=$((step + 1)); printf '[%2d] %s\n' "$step" "$*"; }
fail() { echo "figures.sh: $* (the commands' output: $log)" >&2; tail -20 "$log" >&2; exit 1; }
# run CMD...: one command, its output into the log, a clear failure.
run() { echo "\$ $*" >>"$log"; "$@" >>"$log" 2>&1 || fail "this command failed: $*"; }
note() { printf '| %s | %s | `%s` |\n' "$1" "$2" "$3" >>"$index"; }

# picture NAME WHAT CMD...: CMD draws with -o appended, in both themes and both formats.
picture() {
    local name=$1 what=$2
    shift 2
    for theme in default slides; do
        for ext in $exts; do run "$@" --theme "$theme" -o "$out/$theme/$name.$ext"; done
    done
    note "$name" "$what" "$(echo "$@" | sed "s|$trident|trident|; s|$out/||g")"
}

# ---- groups --------------------------------------------------------------------------------
say "groups of three layouts"
picture groups-8-tp2-pp2 "8 ranks, TP 2 x PP 2 x DP 2: which ranks all-reduce, which pass activations" \
    "$trident" groups --world-size 8 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2
picture groups-8-tp2-pp2-tp-pp-dp "the same layout with --rank-order tp-pp-dp: pipeline before data" \
    "$trident" groups --world-size 8 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 \
    --rank-order tp-pp-dp
[ $quick = 1 ] || picture groups-16-tp2-pp4 "16 ranks on 2 nodes, TP 2 x PP 4 x DP 2 (Megatron's worked example)" \
    "$trident" groups --world-size 16 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 4

# ---- schedules, predicted -----------------------------------------------------------------
p=4 m=8
[ $quick = 1 ] && p=2 m=4
for kind in gpipe 1f1b interleaved zb-h1 zbv dualpipev; do
    say "schedule $kind predicted (p = $p, m = $m)"
    picture "schedule-$kind" "$kind at p = $p, m = $m as predicted: every rank's actions, the bubble, the phases" \
        "$trident" schedule --pipeline-model-parallel-size $p --num-microbatches $m --pipeline-schedule $kind
done
run "$trident" schedule --pipeline-model-parallel-size $p --num-microbatches $m --pipeline-schedule 1f1b \
    --theme slides -o "$out/slides/schedule-1f1b.pdf"
run "$trident" schedule --pipeline-model-parallel-size 4 --num-microbatches 8 --pipeline-schedule 1f1b \
    --build 4 --theme slides -o "$out/slides/build-1f1b.pdf" # 4 pages: the pipeline filling, draining

# ---- schedules, measured ------------------------------------------------------------------
layers=$((2 * p)) batch=$((4 * m)) iters=2
for kind in gpipe 1f1b interleaved zb-h1; do
    say "schedule $kind measured (mpirun -np $p, $iters steps)"
    extra=(--pipeline-schedule "$kind")
    [ "$kind" = interleaved ] && extra=(--num-layers-per-virtual-pipeline-stage 1)
    rm -rf "runs/$kind"
    run mpirun --oversubscribe -np $p "$trident" train --pipeline-model-parallel-size $p \
        --num-layers $layers --global-batch-size $batch "${extra[@]}" --train-iters $iters \
        --eval-iters 0 --log-interval 1 --run-dir "runs/$kind"
    picture "measured-$kind" "$kind measured: the last step of a $p-rank run, re-timed as if each rank had its own core" \
        "$trident" render --replay "runs/$kind"
done
say "measured schedules compared, and their memory"
picture compare-schedules "gpipe, 1f1b, interleaved, zb-h1 measured, stacked on one time scale" \
    "$trident" render --replay "runs/gpipe" "runs/1f1b" "runs/interleaved" "runs/zb-h1"
picture memory-gpipe-vs-1f1b "activation memory in use under each rank: GPipe holds m micro-batches, 1F1B at most p" \
    "$trident" render --replay "runs/gpipe" "runs/1f1b"

# ---- ZeRO ---------------------------------------------------------------------------------
dp=4
[ $quick = 1 ] && dp=2
say "ZeRO-1 buffer at dp = $dp"
for theme in default slides; do
    for ext in $exts; do
        rm -rf "runs/zero-$theme"
        run mpirun --oversubscribe -np $dp "$trident" train --use-distributed-optimizer \
            --micro-batch-size $((16 / dp)) --train-iters 1 --no-trace --theme $theme \
            --draw-zero "$out/$theme/zero-dp$dp.$ext" --run-dir "runs/zero-$theme"
    done
done
note "zero-dp$dp" "the flat parameter buffer cut into $dp data-parallel shards: world, local and param indices" \
    "mpirun -np $dp trident train --use-distributed-optimizer --draw-zero FILE"

# ---- loss curves --------------------------------------------------------------------------
iters=30
[ $quick = 1 ] && iters=6
say "loss curves: serial and TP 2 x PP 2 ($iters steps each)"
rm -rf "runs/loss-serial" "runs/loss-tp2-pp2"
run "$trident" train --train-iters $iters --log-interval 1 --no-trace --run-dir "runs/loss-serial"
run mpirun --oversubscribe -np 4 "$trident" train --tensor-model-parallel-size 2 \
    --pipeline-model-parallel-size 2 --train-iters $iters --log-interval 1 --no-trace \
    --run-dir "runs/loss-tp2-pp2"
picture loss-serial-vs-tp2-pp2 "one model, serial and on 4 ranks: the curves lie on one another" \
    "$trident" render --metrics "runs/loss-serial" "runs/loss-tp2-pp2"

mv "$index" "$out/FIGURES.md"
n=$(ls "$out/slides"/*.png | wc -l)
echo "figures.sh: wrote $n figures x 2 themes x ($exts) into $out/default and $out/slides," \
    "one PDF ($out/slides/schedule-1f1b.pdf); index: $out/FIGURES.md"
