#!/usr/bin/env bash
# failover-drill.sh — submit a job to a running deploy/local cluster, kill -9
# its leading coordinator once in each of the phases named, restart the killed
# replica each time, and compare the job's outputs with a reference directory
# (the outputs of "partopt run MODEL -o REF" with the same options) byte for
# byte. Prints one line per kill and the comparison; exit 0 only when the
# leader was killed in every phase, the job ended done, every output file is identical and the
# report counts the time since the submission.
#
#   DIR=… PARTOPT=… BASE_PORT=… deploy/local/cluster.sh start
#   DIR=… PARTOPT=… BASE_PORT=… deploy/local/failover-drill.sh MODEL REF [SUBMIT FLAGS…]
#
# REF may also be a file of checksums ("sha256sum *" in the reference
# directory: one "HASH  NAME" a line), which keeps a large reference's bytes
# off the disk the cluster needs.
#
# Environment: that of cluster.sh (DIR, PARTOPT, BASE_PORT, NAMESPACE), and
#   PHASES  the phases to kill the leader in, in order of the job (default
#           "loading pbp/running iri/running finishing storing": the windows'
#           phases as METHOD/PHASE, a pbp+iri job's two stages); a phase that
#           has passed unseen is reported, and fails the drill; " " kills none
#   POLL    seconds between status polls (default 0.5)
#   JOB     follow this job, submitted before, instead of submitting MODEL (a
#           drill of a job longer than a sitting: the cluster stopped and
#           started again, the drill run again with the phases left); the
#           report's seconds then count from the job's start in its status
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CLUSTER="$SCRIPT_DIR/cluster.sh"
[[ $# -ge 2 ]] || { sed -n '2,26p' "$0" >&2; exit 2; }
MODEL=$1 REF=$2
shift 2
PHASES=${PHASES:-loading pbp/running iri/running finishing storing}
POLL=${POLL:-0.5}
DIR=${DIR:-${TMPDIR:-/tmp}/partopt-cluster}
BASE_PORT=${BASE_PORT:-14222}
export NATS_URL="nats://127.0.0.1:$BASE_PORT"
BIN=${PARTOPT:-$DIR/bin/partopt}
[[ -x $BIN ]] || { echo "failover-drill: no partopt binary at $BIN (set PARTOPT)" >&2; exit 2; }
[[ -e $REF ]] || { echo "failover-drill: no reference directory or checksum file $REF" >&2; exit 2; }

if [[ -n ${JOB:-} ]]; then
	job=$JOB
	started=$("$BIN" status "$job" --json | tr -d '\n' | sed -n 's/.*"started": *"\([^"]*\)".*/\1/p')
	[[ -n $started ]] || { echo "failover-drill: job $job has no start time in its status" >&2; exit 2; }
	submitted=$(date -d "$started" +%s.%N)
	echo "job $job followed (started $started)"
else
	submitted=$(date +%s.%N)
	job=$("$BIN" submit "$MODEL" "$@")
	echo "job $job submitted"
fi

read -r -a want <<<"$PHASES"
next=0 kills=0
# phase_of JOB: the job's phase, as METHOD/PHASE while its windows run.
phase_of() {
	local js phase method
	js=$("$BIN" status "$1" --json 2>/dev/null | tr -d '\n') || true
	phase=$(sed -n 's/.*"phase": *"\([^"]*\)".*/\1/p' <<<"$js")
	method=$(sed -n 's/.*"method": *"\([^"]*\)".*/\1/p' <<<"$js")
	case $phase in
	running) [[ -n $method ]] && phase="$method/$phase" ;;
	esac
	echo "$phase"
}
while :; do
	phase=$(phase_of "$job")
	case $phase in
	done | failed | cancelled) break ;;
	esac
	if ((next < ${#want[@]})); then
		# A wanted phase seen, or passed: the job is beyond it when it shows a later one.
		for ((i = next; i < ${#want[@]}; i++)); do
			[[ $phase == "${want[$i]}" ]] || continue
			for ((j = next; j < i; j++)); do echo "phase ${want[$j]}: passed unseen"; done
			out=$("$CLUSTER" kill-leader)
			old=$(sed -n 's/^killed \([^ ]*\).*/\1/p' <<<"$out")
			echo "phase $phase: killed $old at $(date +%T); $(tail -n 1 <<<"$out")"
			"$CLUSTER" restart "$old" >/dev/null
			kills=$((kills + 1)) next=$((i + 1))
			break
		done
	fi
	sleep "$POLL"
done
for ((j = next; j < ${#want[@]}; j++)); do echo "phase ${want[$j]}: passed unseen"; done
ended=$(date +%s.%N)
echo "job $job: $phase after $(awk -v a="$submitted" -v b="$ended" 'BEGIN{printf "%.0f", b-a}') s, $kills kills"
[[ $phase == done ]] || exit 1

got=$(mktemp -d)
trap 'rm -rf "$got"' EXIT
"$BIN" fetch "$job" -o "$got/out" >/dev/null
status=0 compared=0
if [[ -d $REF ]]; then
	for f in "$REF"/*; do
		name=$(basename "$f")
		[[ $name == report.json ]] && continue
		compared=$((compared + 1))
		if cmp -s "$f" "$got/out/$name"; then
			echo "identical: $name"
		else
			echo "DIFFERS: $name"
			status=1
		fi
	done
else
	while read -r sum name; do
		name=${name#\*}
		[[ -z $name || $name == report.json ]] && continue
		compared=$((compared + 1))
		if [[ -f $got/out/$name ]] && [[ $(sha256sum <"$got/out/$name" | cut -d' ' -f1) == "$sum" ]]; then
			echo "identical: $name"
		else
			echo "DIFFERS: $name"
			status=1
		fi
	done <"$REF"
fi
if ((compared == 0)); then
	echo "NOTHING COMPARED: $REF names no output"
	status=1
fi
seconds=$(sed -n 's/.*"seconds": *\([0-9.]*\).*/\1/p' "$got/out/report.json" | head -n 1)
seen=$(tr -d '\n ' <"$got/out/report.json" | sed -n 's/.*"workers_seen":\(\[[^]]*\]\).*/\1/p')
echo "report: seconds $seconds, workers_seen $seen"
if awk -v s="$seconds" -v a="$submitted" -v b="$ended" 'BEGIN{exit !(s + 2 < (b - a) * 0.9)}'; then
	echo "REPORT: seconds $seconds is short of the $(awk -v a="$submitted" -v b="$ended" 'BEGIN{printf "%.0f", b-a}') s since the submission"
	status=1
fi
((kills == ${#want[@]})) || status=1
exit $status
