#!/usr/bin/env bash
# A private NATS server with JetStream for tests and local runs, from Debian's
# nats-server package without touching a system service: its own
# configuration, JetStream store and pid file in a state directory, listening
# on 127.0.0.1 only on a free port, no authentication (it holds nothing but
# test data and is never exposed).
#
# As a script:
#   tests/lib/nats.sh start   [-d STATE_DIR]   prints the URL (nats://127.0.0.1:PORT)
#   tests/lib/nats.sh stop    [-d STATE_DIR]   SIGTERM, waits for the exit
#   tests/lib/nats.sh kill    [-d STATE_DIR]   SIGKILL (a crash), waits for the exit
#   tests/lib/nats.sh status  [-d STATE_DIR]   exit 0 when running
#   tests/lib/nats.sh url     [-d STATE_DIR]
# Sourced (bash), the same as functions taking the state dir first:
#   vf_nats_start DIR; vf_nats_stop DIR; vf_nats_kill DIR; vf_nats_status DIR; vf_nats_url DIR
# The default state dir is $VF_NATS_STATE_DIR, else tests/.state/nats. A
# server started again in the same directory keeps its port and its
# JetStream data (what a restart after kill -9 is).
#
# Environment knobs: VF_NATS_PORT (preferred port, default 4223),
# VF_NATS_SERVER (the binary, default nats-server on PATH or /usr/sbin).

VF_NATS_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/broker.sh
. "$VF_NATS_LIB_DIR/broker.sh" # vf_broker__free_port

vf_nats__log() { printf 'nats: %s\n' "$*" >&2; }

vf_nats__bin() {
	local bin=${VF_NATS_SERVER:-}
	[[ -n $bin ]] || bin=$(command -v nats-server || true)
	[[ -n $bin ]] || bin=/usr/sbin/nats-server
	[[ -x $bin ]] || return 1
	printf '%s\n' "$bin"
}

vf_nats__load() {
	[[ -f $1/nats.env ]] || return 1
	# shellcheck disable=SC1091
	. "$1/nats.env"
}

vf_nats_url() {
	vf_nats__load "$1" || return 1
	printf 'nats://127.0.0.1:%s\n' "$VFN_PORT"
}

vf_nats__pid() {
	local pid
	[[ -f $1/nats.pid ]] || return 1
	pid=$(<"$1/nats.pid")
	[[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 1
	printf '%s\n' "$pid"
}

vf_nats_status() {
	local pid
	pid=$(vf_nats__pid "$1") || return 1
	vf_nats__load "$1" || return 1
	(exec 3<>"/dev/tcp/127.0.0.1/$VFN_PORT") 2>/dev/null
}

vf_nats_start() {
	local dir=$1 bin port try pid
	bin=$(vf_nats__bin) || {
		vf_nats__log "no nats-server (install Debian's nats-server)"
		return 1
	}
	mkdir -p "$dir/jetstream" || return 1
	dir=$(cd "$dir" && pwd)
	if vf_nats_status "$dir"; then
		vf_nats_url "$dir"
		return 0
	fi
	# A restart keeps the port clients were given, when it is still free.
	for try in 1 2 3; do
		if vf_nats__load "$dir" && [[ $try == 1 ]]; then
			port=$VFN_PORT
		else
			port=$(vf_broker__free_port "${VF_NATS_PORT:-4223}") || return 1
		fi
		cat >"$dir/nats.conf" <<CONF
listen: 127.0.0.1:$port
pid_file: "$dir/nats.pid"
jetstream {
  store_dir: "$dir/jetstream"
  max_memory_store: 64MB
  max_file_store: 2GB
}
CONF
		printf 'VFN_PORT=%s\n' "$port" >"$dir/nats.env"
		# This start's log alone: "Server is ready" must be its own.
		[[ -f $dir/server.log ]] && mv "$dir/server.log" "$dir/server.log.previous"
		"$bin" -c "$dir/nats.conf" >"$dir/server.log" 2>&1 </dev/null &
		pid=$!
		for _ in $(seq 100); do
			if ! kill -0 "$pid" 2>/dev/null; then
				break
			fi
			if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null &&
				grep -q "Server is ready" "$dir/server.log"; then
				echo "$pid" >"$dir/nats.pid"
				vf_nats__log "server up on 127.0.0.1:$port with JetStream (state in $dir)"
				vf_nats_url "$dir"
				return 0
			fi
			sleep 0.1
		done
		kill "$pid" 2>/dev/null
		vf_nats__log "start attempt $try failed (log: $dir/server.log)"
		sleep "$try"
	done
	return 1
}

vf_nats__end() {
	local dir=$1 signal=$2 pid
	pid=$(vf_nats__pid "$dir") || return 0
	kill "-$signal" "$pid" 2>/dev/null
	for _ in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	vf_nats__log "server $pid did not end on SIG$signal"
	return 1
}

vf_nats_stop() { vf_nats__end "$1" TERM; }
vf_nats_kill() { vf_nats__end "$1" KILL; }

vf_nats__main() {
	local cmd=${1:-}
	shift || true
	local here
	here=$(cd "$VF_NATS_LIB_DIR/../.." && pwd)
	local dir=${VF_NATS_STATE_DIR:-$here/tests/.state/nats}
	while (($#)); do
		case $1 in
		-d)
			dir=$2
			shift
			;;
		*)
			echo "usage: $0 start|stop|kill|status|url [-d STATE_DIR]" >&2
			return 2
			;;
		esac
		shift
	done
	case $cmd in
	start) vf_nats_start "$dir" ;;
	stop) vf_nats_stop "$dir" ;;
	kill) vf_nats_kill "$dir" ;;
	status)
		if vf_nats_status "$dir"; then
			echo "running: $(vf_nats_url "$dir")"
		else
			echo "not running ($dir)"
			return 1
		fi
		;;
	url) vf_nats_url "$dir" ;;
	*)
		echo "usage: $0 start|stop|kill|status|url [-d STATE_DIR]" >&2
		return 2
		;;
	esac
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	set -uo pipefail
	vf_nats__main "$@"
	exit $?
fi
