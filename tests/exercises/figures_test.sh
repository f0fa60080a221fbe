#!/bin/bash
# figures_test.sh — tutorials/figures.sh --quick regenerates every course figure: each one in
# both themes, the slides PDF, and an index naming them; the multi-rank runs behind the
# measured figures leave physically possible traces (checked by `trident render`, which warns
# otherwise); and every figure passes the label audit (TRIDENT_LAYOUT_CHECK=1).
#
#   figures_test.sh FIGURES_SH TRIDENT
set -uo pipefail
figures=$1 trident=$2
out=${TEST_TMPDIR:-/tmp}/figures
rm -rf "$out"
# every figure passes the label audit (viz/canvas.h): a clipped or unreadable label fails it
export TRIDENT_LAYOUT_CHECK=1
if ! bash "$figures" --quick --trident "$trident" "$out"; then
    echo "figures_test: tutorials/figures.sh --quick failed"
    exit 1
fi
status=0
for name in groups-8-tp2-pp2 groups-8-tp2-pp2-tp-pp-dp schedule-gpipe schedule-1f1b \
    schedule-interleaved schedule-zb-h1 schedule-zbv schedule-dualpipev measured-gpipe measured-1f1b measured-interleaved \
    measured-zb-h1 compare-schedules memory-gpipe-vs-1f1b zero-dp2 loss-serial-vs-tp2-pp2; do
    for theme in default slides; do
        f=$out/$theme/$name.png
        if [ ! -s "$f" ] || [ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')" != 89504e470d0a1a0a ]; then
            echo "figures_test: $f is missing or not a PNG"
            status=1
        fi
    done
    cmp -s "$out/default/$name.png" "$out/slides/$name.png" &&
        { echo "figures_test: $name looks the same in both themes"; status=1; }
    grep -q "^| $name |" "$out/FIGURES.md" || { echo "figures_test: FIGURES.md does not list $name"; status=1; }
done
head -c 4 "$out/slides/schedule-1f1b.pdf" | grep -q '%PDF' || { echo "figures_test: no slides PDF"; status=1; }
[ "$(grep -ao '/Type /Page[s]*' "$out/slides/build-1f1b.pdf" | grep -cx '/Type /Page')" = 4 ] ||
    { echo "figures_test: slides/build-1f1b.pdf is not a 4-page build"; status=1; }
if grep -q "warning" "$out/figures.log"; then
    echo "figures_test: a command warned:"
    grep "warning" "$out/figures.log"
    status=1
fi
[ $status = 0 ] && echo "figures_test: every figure, both themes: ok"
exit $status
