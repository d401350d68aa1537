#!/bin/bash
# The cluster issue's stereo job through `partopt run`, as docs/BENCHMARKS.md records it:
# `gen stereo-tiled` of tsukuba (16 disparities) to SIDE×SIDE pixels, then
# `partopt run MODEL -o OUT --state STATE` with default options under /usr/bin/time -v,
# then the sha256 of every output but report.json (to compare with another run's, e.g.
# the same job submitted to a deploy/local cluster). Run it again with the same DIR to
# resume an interrupted run from its state.
#
# usage: scripts/stereo-run.sh PARTOPT DIR [SIDE]
#   PARTOPT  the partopt binary
#   DIR      where the model, the state, the outputs and the logs go
#   SIDE     the raster's side in pixels (default 10000: 10⁸ pixels, a 6.4 GB .grid)
# Environment: SHARED (default ../shared beside the checkout).
set -euo pipefail
B=$1 D=$2 S=${3:-10000}
HERE=$(cd "$(dirname "$0")" && pwd)
SHARED=${SHARED:-$HERE/../../shared}
T=$SHARED/images/middlebury-tsukuba
mkdir -p "$D"
[ -f "$D/stereo.grid" ] || "$B" gen stereo-tiled "$T/tsukuba1.bmp" "$T/tsukuba2.bmp" \
	--width "$S" --height "$S" --disparities 16 -o "$D/stereo.grid"
/usr/bin/time -v "$B" run "$D/stereo.grid" -o "$D/out" --state "$D/state" 2>>"$D/run.log"
grep -E "Elapsed|Maximum resident|User time|System time" "$D/run.log" | tail -4
(cd "$D/out" && find . -type f ! -name report.json | sort | xargs sha256sum) | tee "$D/outputs.sha256"
