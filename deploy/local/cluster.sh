#!/usr/bin/env bash
# cluster.sh — a whole partopt cluster on this machine, as separate processes:
# a NATS server with JetStream ("partopt server"), three raft coordinator
# replicas (c1, c2, c3) and $WORKERS workers, all on loopback addresses.
#
#   deploy/local/cluster.sh start         # build, launch, wait for a leader
#   deploy/local/cluster.sh demo          # generate, submit, wait, fetch a 256×256 job
#   deploy/local/cluster.sh status        # each process alive or dead (its memory
#                                         # and CPU time so far); the leader
#   deploy/local/cluster.sh logs [-f] [NAME…]
#   deploy/local/cluster.sh kill-leader   # kill -9 the leading coordinator
#   deploy/local/cluster.sh restart NAME  # start NAME again with its arguments
#   WORKERS=4 deploy/local/cluster.sh scale
#   deploy/local/cluster.sh stop          # SIGTERM, SIGKILL after $STOP_TIMEOUT s
#
# Environment:
#   DIR          state: logs/, pids/, cmds/, nats/, data/, cache/, bin/
#                (default ${TMPDIR:-/tmp}/partopt-cluster)
#   WORKERS      workers started by start, kept by scale (default 2)
#   SLOTS        tasks each worker solves at once (default 1)
#   BASE_PORT    NATS on BASE_PORT, raft on BASE_PORT+1..+3, status pages on
#                BASE_PORT+11..+13 (default 14222); start refuses ports in use
#   NAMESPACE    the cluster's namespace on its NATS server (default
#                $PARTOPT_NAMESPACE, else partopt), exported to every command
#   ACK_WAIT     --ack-wait of coordinators and workers (default 30s)
#   GRACE        --grace of workers at SIGTERM (default 5s)
#   STOP_TIMEOUT seconds from SIGTERM to SIGKILL in stop (default 10)
#   PARTOPT      the partopt binary (default: go build into $DIR/bin/partopt
#                from the repository this script is in)
#   SHARED_ROOT  a directory every coordinator and worker reads models below
#                (--shared-root): "submit --shared" jobs of models there are
#                read in place, neither uploaded nor copied (default: none)
#
# Every process logs to $DIR/logs/NAME.log, its pid is $DIR/pids/NAME.pid and
# its command line, one argument a line, is $DIR/cmds/NAME (for restart).
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/../.." && pwd)
DIR=${DIR:-${TMPDIR:-/tmp}/partopt-cluster}
WORKERS=${WORKERS:-2}
SLOTS=${SLOTS:-1}
BASE_PORT=${BASE_PORT:-14222}
ACK_WAIT=${ACK_WAIT:-30s}
GRACE=${GRACE:-5s}
STOP_TIMEOUT=${STOP_TIMEOUT:-10}
COORDINATORS=(c1 c2 c3)
# Absolute paths: they are written into $DIR/cmds for restart.
[[ $DIR == /* ]] || DIR="$PWD/$DIR"
[[ -z ${PARTOPT:-} || $PARTOPT == /* ]] || PARTOPT="$PWD/$PARTOPT"
SHARED=()
if [[ -n ${SHARED_ROOT:-} ]]; then
	[[ $SHARED_ROOT == /* ]] || SHARED_ROOT="$PWD/$SHARED_ROOT"
	SHARED=(--shared-root "$SHARED_ROOT")
fi

NAMESPACE=${NAMESPACE:-${PARTOPT_NAMESPACE:-partopt}}
NATS_URL="nats://127.0.0.1:$BASE_PORT"
PARTOPT_NAMESPACE=$NAMESPACE
export NATS_URL PARTOPT_NAMESPACE

die() {
	echo "cluster.sh: $*" >&2
	exit 1
}

# bin prints the partopt binary, building it on first use (and always with
# build=1, so that start runs the current source).
bin() {
	local build=${1:-0}
	if [[ -n ${PARTOPT:-} ]]; then
		[[ -x $PARTOPT ]] || die "PARTOPT=$PARTOPT is not an executable"
		printf '%s\n' "$PARTOPT"
		return
	fi
	local out="$DIR/bin/partopt"
	if [[ $build == 1 || ! -x $out ]]; then
		command -v go >/dev/null || die "no go command to build partopt: set PARTOPT=/path/to/partopt"
		mkdir -p "$DIR/bin"
		echo "building $out from $REPO" >&2
		(cd "$REPO" && go build -o "$out" ./cmd/partopt) || die "go build failed"
	fi
	printf '%s\n' "$out"
}

pid_of() {
	local f="$DIR/pids/$1.pid"
	[[ -f $f ]] && cat "$f"
}

# alive NAME: the process in NAME's pid file runs (a zombie does not count).
alive() {
	local pid state
	pid=$(pid_of "$1") || return 1
	[[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 1
	if [[ -r /proc/$pid/stat ]]; then
		state=$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1) || return 1
		[[ $state != Z && -n $state ]] || return 1
	fi
}

# names lists the processes this DIR knows, the server first.
names() {
	local f n
	[[ -d $DIR/cmds ]] || return 0
	[[ -f $DIR/cmds/nats ]] && echo nats
	for n in "${COORDINATORS[@]}"; do
		[[ -f $DIR/cmds/$n ]] && echo "$n"
	done
	for f in "$DIR"/cmds/worker*; do
		[[ -f $f ]] && basename "$f"
	done | sort -V
}

# launch NAME: start NAME's saved command line in the background.
launch() {
	local name=$1 args=() arg
	alive "$name" && die "$name is running (pid $(pid_of "$name"))"
	while IFS= read -r arg; do
		args+=("$arg")
	done <"$DIR/cmds/$name"
	printf '=== cluster.sh: starting %s at %s\n' "$name" "$(date '+%F %T')" >>"$DIR/logs/$name.log"
	nohup "${args[@]}" >>"$DIR/logs/$name.log" 2>&1 </dev/null &
	echo "$!" >"$DIR/pids/$name.pid"
}

# save NAME ARG…: record NAME's command line, one argument a line.
save() {
	local name=$1
	shift
	printf '%s\n' "$@" >"$DIR/cmds/$name"
}

# leads NAME: coordinator NAME runs and its log, since it last started, ends
# leading.
leads() {
	alive "$1" || return 1
	awk '/^=== cluster.sh: starting/ { s = 0 }
	     /msg=leading id=/ { s = 1 }
	     /msg="no longer leading"/ { s = 0 }
	     END { exit !s }' "$DIR/logs/$1.log"
}

leader() {
	local n
	for n in "${COORDINATORS[@]}"; do
		if leads "$n"; then
			echo "$n"
			return 0
		fi
	done
	return 1
}

# page_of NAME: coordinator NAME's --http address, from its command line.
page_of() {
	awk 'prev == "--http" { print; exit } { prev = $0 }' "$DIR/cmds/$1"
}

# wait_for SECONDS WHAT COMMAND…: run COMMAND every 0.2 s until it succeeds.
wait_for() {
	local secs=$1 what=$2
	shift 2
	local end=$((SECONDS + secs))
	until "$@"; do
		((SECONDS < end)) || die "no $what after ${secs}s (see $DIR/logs)"
		sleep 0.2
	done
}

nats_answers() {
	alive nats || die "the NATS server died: $(tail -n 5 "$DIR/logs/nats.log")"
	local out
	out=$("$BIN" status cluster-sh-probe --nats "$NATS_URL" 2>&1) && return 0
	case $out in
	*connect* | *"no servers"* | *timeout* | *deadline*) return 1 ;;
	esac
	return 0 # "no job cluster-sh-probe": NATS and JetStream answered
}

# ports_free: none of the cluster's ports answers a connection (another
# cluster's server would answer the probes below for this one).
ports_free() {
	local p taken=()
	for p in "$BASE_PORT" $((BASE_PORT + 1)) $((BASE_PORT + 2)) $((BASE_PORT + 3)) \
		$((BASE_PORT + 11)) $((BASE_PORT + 12)) $((BASE_PORT + 13)); do
		if (: <"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			taken+=("$p")
		fi
	done
	((${#taken[@]} == 0)) || die "ports in use on 127.0.0.1: ${taken[*]} (another cluster? choose another BASE_PORT)"
}

worker_cmd() {
	local i=$1
	save "worker$i" "$BIN" worker --nats "$NATS_URL" --id "worker$i" --slots "$SLOTS" \
		--grace "$GRACE" --ack-wait "$ACK_WAIT" --cache "$DIR/cache/worker$i" "${SHARED[@]+"${SHARED[@]}"}"
}

cmd_start() {
	local n i running=()
	if [[ -d $DIR/cmds ]]; then
		for n in $(names); do
			alive "$n" && running+=("$n")
		done
	fi
	((${#running[@]} == 0)) || die "already running in $DIR: ${running[*]} (cluster.sh stop first)"
	ports_free
	BIN=$(bin 1)
	mkdir -p "$DIR"/{logs,pids,cmds,nats,data,cache}
	rm -f "$DIR"/cmds/* "$DIR"/pids/*

	save nats "$BIN" server --listen "127.0.0.1:$BASE_PORT" --dir "$DIR/nats"
	launch nats
	# A kept store is recovered before the server listens: after a crash that
	# takes minutes for a large job's (the server logs its wait every 15 s).
	wait_for 900 "NATS server at $NATS_URL" nats_answers

	local peers="" k=1
	for n in "${COORDINATORS[@]}"; do
		peers+="${peers:+,}$n=127.0.0.1:$((BASE_PORT + k))"
		k=$((k + 1))
	done
	k=1
	for n in "${COORDINATORS[@]}"; do
		save "$n" "$BIN" coordinator --nats "$NATS_URL" --data "$DIR/data/$n" \
			--http "127.0.0.1:$((BASE_PORT + 10 + k))" --ack-wait "$ACK_WAIT" \
			--id "$n" --raft-addr "127.0.0.1:$((BASE_PORT + k))" --peers "$peers" --bootstrap "${SHARED[@]+"${SHARED[@]}"}"
		launch "$n"
		k=$((k + 1))
	done
	for ((i = 1; i <= WORKERS; i++)); do
		worker_cmd "$i"
		launch "worker$i"
	done
	wait_for 60 "coordinator leader" leader >/dev/null

	local lead
	lead=$(leader)
	echo "NATS:         $NATS_URL (namespace $NAMESPACE)"
	k=1
	for n in "${COORDINATORS[@]}"; do
		# Only the leader's page lists the jobs.
		echo "status page:  http://127.0.0.1:$((BASE_PORT + 10 + k))/ ($n$([[ $n == "$lead" ]] && echo ", leader"))"
		k=$((k + 1))
	done
	echo "leader:       $lead"
	echo "workers:      $WORKERS × $SLOTS slots"
	echo "state:        $DIR"
}

# term NAME…: SIGTERM them, SIGKILL those left after STOP_TIMEOUT seconds.
term() {
	local n left=() end
	for n in "$@"; do
		if alive "$n"; then
			kill -TERM "$(pid_of "$n")" 2>/dev/null || true
			left+=("$n")
		fi
	done
	end=$((SECONDS + STOP_TIMEOUT))
	while ((${#left[@]} > 0)); do
		local still=()
		for n in "${left[@]}"; do
			alive "$n" && still+=("$n")
		done
		left=("${still[@]+"${still[@]}"}")
		((${#left[@]} > 0)) || break
		if ((SECONDS >= end)); then
			for n in "${left[@]}"; do
				echo "cluster.sh: $n did not stop in ${STOP_TIMEOUT}s: SIGKILL" >&2
				kill -KILL "$(pid_of "$n")" 2>/dev/null || true
			done
			sleep 0.2
			break
		fi
		sleep 0.2
	done
	for n in "$@"; do
		rm -f "$DIR/pids/$n.pid"
	done
}

cmd_stop() {
	local n services=()
	for n in $(names); do
		[[ $n == nats ]] || services+=("$n")
	done
	# Workers and coordinators first, so that they hand back and disconnect
	# while the server still runs.
	((${#services[@]} == 0)) || term "${services[@]}"
	[[ ! -f $DIR/cmds/nats ]] || term nats
	echo "stopped"
}

# resources PID: the process's memory (resident now, its peak) and CPU time so far,
# from /proc (nothing where there is none).
resources() {
	local rss hwm fields
	[[ -r /proc/$1/status && -r /proc/$1/stat ]] || return 0
	rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$1/status")
	hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$1/status")
	# utime and stime, fields 14 and 15, counted after the command's closing parenthesis.
	read -r -a fields <<<"$(sed 's/^.*) //' "/proc/$1/stat")"
	awk -v r="$rss" -v h="$hwm" -v u="${fields[11]}" -v s="${fields[12]}" -v hz="$(getconf CLK_TCK)" \
		'BEGIN {printf "  rss %.0f MB, peak %.0f MB, cpu %.0f s", r/1024, h/1024, (u+s)/hz}'
}

cmd_status() {
	local n pid state lead
	[[ -d $DIR/cmds ]] || die "nothing started in $DIR"
	for n in $(names); do
		pid=$(pid_of "$n" || true)
		if alive "$n"; then state="alive (pid $pid)$(resources "$pid")"; else state="dead"; fi
		lead=""
		[[ $n == c? ]] && leads "$n" && lead="  leader"
		printf '%-10s %s%s\n' "$n" "$state" "$lead"
	done
	if lead=$(leader); then
		echo "leader: $lead (status page http://$(page_of "$lead")/)"
	else
		echo "leader: none"
	fi
}

cmd_logs() {
	local follow=() files=() all=() n
	if [[ ${1:-} == -f ]]; then
		follow=(-f)
		shift
	fi
	if (($# == 0)); then
		while IFS= read -r n; do
			all+=("$n")
		done < <(names)
		set -- "${all[@]+"${all[@]}"}"
	fi
	for n in "$@"; do
		[[ -f $DIR/logs/$n.log ]] || die "no log $DIR/logs/$n.log"
		files+=("$DIR/logs/$n.log")
	done
	tail -n "${TAIL:-20}" "${follow[@]+"${follow[@]}"}" "${files[@]}"
}

cmd_demo() {
	BIN=$(bin)
	alive nats || die "the cluster is not running in $DIR (cluster.sh start)"
	local model="$DIR/demo.grid" out="$DIR/demo-out" job
	"$BIN" gen tiled "$REPO/gen/testdata/blocks.png" -o "$model" --width 256 --height 256 --labels 4
	job=$("$BIN" submit "$model" --window 32 --halo 8 --nats "$NATS_URL")
	echo "job: $job"
	"$BIN" status "$job" --wait --nats "$NATS_URL"
	rm -rf "$out"
	"$BIN" fetch "$job" -o "$out" --nats "$NATS_URL"
	ls -l "$out"
}

cmd_kill_leader() {
	local old new pid
	old=$(leader) || die "no coordinator leads"
	pid=$(pid_of "$old")
	kill -KILL "$pid"
	echo "killed $old (pid $pid)"
	# Until the killed process is gone, its log still ends leading: leader
	# would name it.
	wait_for 10 "end of $old" dead "$old"
	wait_for 60 "new leader" leader >/dev/null
	new=$(leader) || die "the new leader lost the lead at once (see $DIR/logs)"
	echo "new leader: $new"
}

# dead NAME: NAME's process no longer runs.
dead() { ! alive "$1"; }

cmd_restart() {
	local name=${1:-}
	[[ -n $name ]] || die "restart NAME (one of: $(names | tr '\n' ' '))"
	[[ -f $DIR/cmds/$name ]] || die "no $name in $DIR/cmds"
	term "$name"
	launch "$name"
	echo "restarted $name (pid $(pid_of "$name"))"
}

cmd_scale() {
	local i n extra=()
	alive nats || die "the cluster is not running in $DIR (cluster.sh start)"
	BIN=$(bin)
	for ((i = 1; i <= WORKERS; i++)); do
		if ! alive "worker$i"; then
			worker_cmd "$i"
			launch "worker$i"
		fi
	done
	for n in $(names); do
		if [[ $n == worker* ]] && ((${n#worker} > WORKERS)); then
			extra+=("$n")
		fi
	done
	if ((${#extra[@]} > 0)); then
		term "${extra[@]}"
		for n in "${extra[@]}"; do
			rm -f "$DIR/cmds/$n"
		done
	fi
	echo "workers: $WORKERS"
}

usage() {
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
}

case ${1:-} in
start) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
logs)
	shift
	cmd_logs "$@"
	;;
demo) cmd_demo ;;
kill-leader) cmd_kill_leader ;;
restart) cmd_restart "${2:-}" ;;
scale) cmd_scale ;;
help | -h | --help) usage ;;
*)
	usage >&2
	exit 2
	;;
esac
