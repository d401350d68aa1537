#!/bin/bash
# The whole-model default against the authors' part_opt, side by side on one core:
# the rows of the speed issue and of ../shared/IRI.md, part_opt's iri_driver (built by
# ../shared/peers/build.sh) and `partopt solve MODEL -o OUT`, alternating, PASSES times
# each; one line a model: part_opt's seconds (persistent, eliminated fraction) for each
# pass, then ours (report.json's seconds, persistent, eliminated fraction), then the
# ratio of the fastest of each; last, the geometric mean of those ratios. Ours runs
# with --complete=false: report.json's seconds are the method's either way (the
# completion has its own), and toulbar2 on the spin glasses would add minutes.
#
# usage: scripts/vs-part-opt.sh PARTOPT IRI_DRIVER [PASSES] [FILTER]
#   PARTOPT     the partopt binary to measure
#   IRI_DRIVER  part_opt's driver (../shared/peers/README.md)
#   PASSES      passes a model (default 3); report the fastest of each
#   FILTER      an extended regex the model paths must match (default: all)
# Environment: SHARED (default ../shared beside the checkout), CORE (default 1),
# WORK (default a temporary directory: the generated stereo models, the outputs).
# Stop other work on the machine meanwhile (this VM's times vary by ±40% beside a job).
set -euo pipefail
B=$1 IRI=$2 N=${3:-3} F=${4:-.}
HERE=$(cd "$(dirname "$0")" && pwd)
SHARED=${SHARED:-$HERE/../../shared}
CORE=${CORE:-1}
WORK=${WORK:-$(mktemp -d)}
M=$SHARED/models
T=$SHARED/images/middlebury-tsukuba
# The two stereo rows: tsukuba (`gen stereo`) and the issue's 96×96 crop, as .grid for
# us and .uai for part_opt.
[ -f "$WORK/tsukuba.uai" ] || {
	"$B" gen stereo "$T/tsukuba1.bmp" "$T/tsukuba2.bmp" --disparities 16 -o "$WORK/tsukuba.grid" >/dev/null
	"$B" convert "$WORK/tsukuba.grid" "$WORK/tsukuba.uai" >/dev/null
}
[ -f "$WORK/s96.uai" ] || {
	"$B" gen stereo-tiled "$T/tsukuba1.bmp" "$T/tsukuba2.bmp" --width 96 --height 96 --disparities 16 -o "$WORK/s96.grid" >/dev/null
	"$B" convert "$WORK/s96.grid" "$WORK/s96.uai" >/dev/null
}
rows="$M/pascal2-dechterlab/proteinfolding/pdb1jmx.uai $M/pascal2-dechterlab/proteinfolding/pdb1qks.uai
$M/pascal2-dechterlab/proteinfolding/pdb1i24.uai $M/uai2014-mroavi/MAP/ObjectDetection_11.uai
$M/uai2014-mroavi/MAP/ProteinFolding_19.uai $M/uai2014-mroavi/MAP/ProteinFolding_15.uai
$M/uai2014-mroavi/MAP/Segmentation_11.uai $M/uai2014-mroavi/MAP/Segmentation_12.uai
$M/uai2014-mroavi/MAP/Segmentation_13.uai $M/uai2014-mroavi/MAP/Segmentation_14.uai
$M/pascal2-dechterlab/segmentation/1_28_s.binary.uai $WORK/tsukuba $WORK/s96
$M/uai2014-mroavi/MAP/Grids_18.uai $M/uai2014-mroavi/MAP/Grids_26.uai $M/uai2014-mroavi/MAP/Grids_28.uai
$M/toulbar2/grid10x10.f10.uai $M/toulbar2/GEOM40_3.wcsp.uai $M/uai2014-mroavi/MAP/wcsp_15.uai"
for r in $(echo $rows | tr ' ' '\n' | grep -E "$F"); do
	ref=$r ours=$r
	case $r in "$WORK"/*) ref=$r.uai ours=$r.grid ;; esac
	po="" us=""
	for _ in $(seq "$N"); do
		o=$(OMP_NUM_THREADS=1 taskset -c "$CORE" "$IRI" "$ref" --quiet 2>/dev/null | grep RESULT)
		po="$po $(echo "$o" | sed -E 's/.*persistent_vars=([0-9]+).*eliminated_label_fraction=([0-9.e-]+).*seconds=([0-9.e-]+).*/\3 (\1, \2)/')"
		rm -rf "$WORK/out"
		GOMAXPROCS=1 taskset -c "$CORE" "$B" solve "$ours" -o "$WORK/out" --complete=false >/dev/null 2>&1
		us="$us $(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('%.6f (%d, %.4f)' % (r['seconds'], r.get('persistent_variables', 0), r.get('eliminated_label_fraction', 0)))" "$WORK/out/report.json")"
	done
	ratio=$(python3 -c "import sys; f=lambda s: min(map(float, s.split()[0::3])); print('%.3f' % (f(sys.argv[2]) / f(sys.argv[1])))" "$po" "$us")
	echo "$(basename "$r") | part_opt$po | partopt$us | $ratio"
	ratios="${ratios:-} $ratio"
done
python3 -c "import math, sys; r = [float(x) for x in sys.argv[1:]]; print('geometric mean of the ratios: %.3f over %d models' % (math.exp(sum(map(math.log, r)) / len(r)), len(r)))" $ratios
