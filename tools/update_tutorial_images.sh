#!/usr/bin/env bash
# update_tutorial_images.sh — redraw every committed tutorial picture (tutorials/images/*.png)
# from its page's own commands, with the binary as it is now. For after a change to how
# pictures are drawn: //tests/tutorials:tutorials_test compares the committed pictures with
# what the pages' commands draw (byte for byte for pictures drawn from numbers alone, the
# pixel size for pictures of measured runs) and fails when they drift.
#
#   bash tools/update_tutorial_images.sh        (minutes: it runs every page)
#
# It runs the test with TRIDENT_UPDATE_IMAGES=1 (nothing compared; every fresh picture left in
# the test's undeclared outputs), then copies those pictures over tutorials/images/ and lists
# what changed. Look at them before committing. The test's other checks still run: a page
# that fails for another reason is reported, and its pictures are copied all the same.
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/mpi_env.sh
status=0
bazel test --jobs 2 //tests/tutorials:tutorials_test --test_env=TRIDENT_UPDATE_IMAGES=1 \
    --test_output=errors || status=$?
out=bazel-testlogs/tests/tutorials/tutorials_test/test.outputs
if [ -f "$out/outputs.zip" ]; then
    unzip -o -q "$out/outputs.zip" 'images/*' -d tutorials/ || { echo "update_tutorial_images: no pictures in $out/outputs.zip"; exit 1; }
elif [ -d "$out/images" ]; then
    cp "$out"/images/*.png tutorials/images/
else
    echo "update_tutorial_images: the test left no pictures under $out"
    exit 1
fi
git status --short tutorials/images
[ "$status" = 0 ] || echo "update_tutorial_images: the test failed for another reason (status $status): see above"
exit "$status"
