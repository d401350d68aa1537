#!/bin/bash
# Time to a proven optimum: partopt's default pipeline (persistency, label
# elimination, then the exact completion of what they leave) against toulbar2 on
# the whole model, side by side on one pinned core. One line a model:
#
#   MODEL | partopt WALL_S optimal|open ENERGY (UNDECIDED left, METHOD COUNT…) | toulbar2 WALL_S optimum|unproven|none ENERGY | OPT
#
# partopt is `partopt solve MODEL -o OUT --complete-budget engine=LIMIT` (wall time of
# the command: reading, proofs, completion, checks, outputs); toulbar2 is run on the
# same file (a .grid converted to UAI first, not timed) with the options that
# ../shared/models/oracle/oracle.tsv records for the model (else its default) and a
# CPU limit of LIMIT; OPT is that table's optimum (or "-").
#
# usage: scripts/vs-toulbar2.sh PARTOPT [LIMIT] [FILTER]
#   PARTOPT  the partopt binary to measure
#   LIMIT    seconds for toulbar2, and for each component partopt hands it (default 600)
#   FILTER   an extended regex the model paths must match (default: all)
# Environment: SHARED (default ../shared beside the checkout), CORE (default 1), WORK
# (default a temporary directory: the generated stereo and segmentation models,
# outputs). Stop other work on the machine meanwhile.
set -euo pipefail
B=$1 LIMIT=${2:-600} F=${3:-.}
HERE=$(cd "$(dirname "$0")" && pwd)
SHARED=${SHARED:-$HERE/../../shared}
CORE=${CORE:-1}
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$WORK"
M=$SHARED/models
T=$SHARED/images/middlebury-tsukuba
command -v toulbar2 >/dev/null || { echo "vs-toulbar2: toulbar2 is not installed (apt-get install toulbar2)" >&2; exit 2; }
command -v jq >/dev/null || { echo "vs-toulbar2: jq is not installed (apt-get install jq)" >&2; exit 2; }
# The generated rows: tsukuba at 16 disparities, the 96×96 stereo crop of the speed
# issue, and a 256×256 colour segmentation of 4 labels.
[ -f "$WORK/tsukuba.grid" ] || "$B" gen stereo "$T/tsukuba1.bmp" "$T/tsukuba2.bmp" --disparities 16 -o "$WORK/tsukuba.grid" >/dev/null
[ -f "$WORK/s96.grid" ] || "$B" gen stereo-tiled "$T/tsukuba1.bmp" "$T/tsukuba2.bmp" --width 96 --height 96 --disparities 16 -o "$WORK/s96.grid" >/dev/null
[ -f "$WORK/seg256.grid" ] || "$B" gen tiled "$T/tsukuba1.bmp" --width 256 --height 256 --labels 4 -o "$WORK/seg256.grid" >/dev/null
models="$(find "$M" -name '*.uai' -o -name '*.wcsp' -o -name '*.LG' | sort) $WORK/s96.grid $WORK/seg256.grid $WORK/tsukuba.grid"
ms() { date +%s%N; }
for m in $(echo $models | tr ' ' '\n' | grep -E "$F"); do
	rel=${m#"$M"/}
	opt=$(awk -F'\t' -v f="$rel" '$1 == f { print $2 }' "$M/oracle/oracle.tsv" 2>/dev/null | sed -E 's/^OPT //; s/ .*//')
	how=$(awk -F'\t' -v f="$rel" '$1 == f { print $3 }' "$M/oracle/oracle.tsv" 2>/dev/null | sed -E 's/,.*//; s/^default$//')
	rm -rf "$WORK/out"
	t0=$(ms)
	GOMAXPROCS=1 taskset -c "$CORE" "$B" solve "$m" -o "$WORK/out" --complete-budget "engine=${LIMIT}s" >/dev/null 2>&1 || true
	t1=$(ms)
	us=$(jq -r '"\(if .optimal then "optimal" else "open" end) \(.energy) (\(.completion.undecided_variables // 0) left\(.completion.methods // {} | to_entries | map(", \(.key) \(.value)") | join("")))"' "$WORK/out/report.json" 2>/dev/null || echo "failed")
	tb=$m
	case $m in *.grid)
		tb=${m%.grid}.uai
		[ -f "$tb" ] || "$B" convert "$m" "$tb" >/dev/null
		;;
	esac
	t2=$(ms)
	# shellcheck disable=SC2086 # the oracle's options, split
	out=$(taskset -c "$CORE" toulbar2 "$tb" -timer="$LIMIT" $how 2>&1 || true)
	t3=$(ms)
	if o=$(echo "$out" | grep '^Optimum:'); then
		them="optimum $(echo "$o" | sed -E 's/.* energy: ([-0-9.e+]+).*/\1/; s/^Optimum: ([0-9]+) in.*/\1/')"
	elif o=$(echo "$out" | grep '^New solution:' | tail -1) && [ -n "$o" ]; then
		them="unproven $(echo "$o" | sed -E 's/.* energy: ([-0-9.e+]+).*/\1/')"
	else
		them="none"
	fi
	printf '%s | partopt %.2f %s | toulbar2 %.2f %s | %s\n' "$(basename "$m")" "$(((t1 - t0) / 1000000))e-3" "$us" "$(((t3 - t2) / 1000000))e-3" "$them" "${opt:--}"
done
