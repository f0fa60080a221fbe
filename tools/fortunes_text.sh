#!/usr/bin/env bash
# fortunes_text.sh OUT_FILE — real English text for `trident train --data-path`: the plain-text
# fortune files of Debian's `fortunes` package (tools/setup.sh installs it), concatenated in
# file-name order (LC_ALL=C), so every machine with the same package version writes the same
# bytes. Skipped: the *.dat index files (binary), the *.u8 names (symbolic links to the same
# text) and any off/ directory (the offensive collection lives in a separate package anyway).
# The '%' lines that separate fortunes are kept: they are part of the text's structure.
#
# Licence (/usr/share/doc/fortunes/copyright): the package is distributed under the BSD licence
# of the Regents of the University of California (1991; its advertising clause 3 deleted); the
# file also carries the notice of the atheism cookie file's compiler.
# The text is a collection of quotations; keep that copyright file with any copy you share.
#
# A setting that reaches held-out loss 1.69 nats/byte (--split 95,5) in 1,600 steps, 5.1 minutes
# serially on a shared 2-core machine: trident train --data-path OUT_FILE --num-layers 4
# --hidden-size 128 --num-attention-heads 4 --seq-length 128 --micro-batch-size 16
# --global-batch-size 16 --lr 5e-3 --min-lr 5e-4 --lr-warmup-iters 100 --train-iters 1600
# --eval-iters 16 (lr 3e-3, min 3e-4, warmup 50: 1.73 in 4.8 minutes).
#
# Writes OUT_FILE through a temporary file and a rename, so a failed run never leaves half a
# file over a good one, and prints the size. Dies with one line when the package is missing
# or the text is under 1 MB.
set -euo pipefail
if [ $# -ne 1 ]; then
    echo "usage: tools/fortunes_text.sh OUT_FILE" >&2
    exit 2
fi
out=$1
dir=${FORTUNES_DIR:-/usr/share/games/fortunes}
if [ ! -d "$dir" ]; then
    echo "fortunes_text: $dir does not exist: install Debian's 'fortunes' package (bash tools/setup.sh)" >&2
    exit 1
fi
files=()
while IFS= read -r f; do files+=("$f"); done < <(
    find "$dir" -maxdepth 1 -type f ! -name '*.dat' ! -name '*.u8' -printf '%f\n' | LC_ALL=C sort)
if [ ${#files[@]} -eq 0 ]; then
    echo "fortunes_text: no plain-text fortune file in $dir" >&2
    exit 1
fi
tmp="$out.tmp.$$"
trap 'rm -f "$tmp"' EXIT
for f in "${files[@]}"; do cat "$dir/$f"; done > "$tmp"
size=$(wc -c < "$tmp")
if [ "$size" -lt 1000000 ]; then
    echo "fortunes_text: only $size bytes in ${#files[@]} files of $dir; a held-out split needs at least 1 MB" >&2
    exit 1
fi
mv -f "$tmp" "$out"
trap - EXIT
echo "fortunes_text: wrote $out: $size bytes from ${#files[@]} files of $dir"
