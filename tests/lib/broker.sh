#!/usr/bin/env bash
# A private RabbitMQ node for tests and local runs, started from Debian's
# rabbitmq-server package without touching the system service: its own HOME
# (Erlang cookie), data and log dirs, its own epmd on a private port, and every
# listener on 127.0.0.1 only. Everything the node needs to be found again lives
# in its state directory, so start, ctl and stop may run in different shells.
#
# As a script:
#   tests/lib/broker.sh start  [-d STATE_DIR] [--management]   prints the AMQP URL
#   tests/lib/broker.sh stop   [-d STATE_DIR]
#   tests/lib/broker.sh status [-d STATE_DIR]                  exit 0 when running
#   tests/lib/broker.sh url    [-d STATE_DIR]
#   tests/lib/broker.sh api-url [-d STATE_DIR]                 the HTTP API's URL (--management)
#   tests/lib/broker.sh ctl    [-d STATE_DIR] -- ARGS...       rabbitmqctl against the node
# Sourced (bash), the same as functions taking the state dir first:
#   vf_broker_start DIR [--management]; vf_broker_stop DIR; vf_broker_status DIR;
#   vf_broker_url DIR; vf_broker_api_url DIR; vf_broker_ctl DIR ARGS... (e.g. list_queues, import_definitions FILE,
#   stop_app, start_app); vf_broker_answers URL (does a broker answer there?).
# The default state dir is $VF_BROKER_STATE_DIR, else tests/.state/broker.
#
# Environment knobs: VF_BROKER_PORT (preferred AMQP port, default 5673),
# VF_BROKER_TIMEOUT_S (start-up limit, default 90).

VF_RABBIT_BIN=${VF_RABBIT_BIN:-/usr/lib/rabbitmq/bin}
VF_BROKER_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# True when URL's host:port answers the AMQP 0-9-1 protocol header with
# connection.start: the check of tests/integration/test_broker_up, 5 s limit.
vf_broker_answers() {
	VF_AMQP_URL=$1 VF_PROBE_TIMEOUT_S=5 \
		bash "$VF_BROKER_LIB_DIR/../integration/test_broker_up" >/dev/null 2>&1
}

vf_broker__log() { printf 'broker: %s\n' "$*" >&2; }

# Prints a port on 127.0.0.1 that nobody listens on: the preferred one when it
# is free, else the first free one from a scan. Binding (not connecting) is the
# test, so a listener on 0.0.0.0 or one still in TIME_WAIT counts as taken.
vf_broker__free_port() {
	python3 - "$1" <<'PY'
import socket, sys
preferred = int(sys.argv[1])
def free(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()
for port in [preferred] + list(range(preferred + 1, preferred + 2000)):
    if 1024 < port < 65536 and free(port):
        print(port)
        sys.exit(0)
sys.exit(1)
PY
}

vf_broker__load() {
	local dir=$1
	if [[ ! -f $dir/broker.env ]]; then
		return 1
	fi
	# shellcheck disable=SC1091
	. "$dir/broker.env"
}

# Runs a RabbitMQ CLI tool with the node's private environment.
vf_broker__cli() {
	local dir=$1 tool=$2
	shift 2
	vf_broker__load "$dir" || {
		vf_broker__log "no private broker in $dir"
		return 1
	}
	env HOME="$VFB_HOME" ERL_EPMD_PORT="$VFB_EPMD_PORT" ERL_EPMD_ADDRESS=127.0.0.1 \
		RABBITMQ_CONF_ENV_FILE="$dir/rabbitmq-env.conf" \
		RABBITMQ_CONFIG_FILE="$dir/rabbitmq.conf" \
		RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins" \
		RABBITMQ_MNESIA_BASE="$dir/mnesia" RABBITMQ_LOG_BASE="$dir/log" \
		"$VF_RABBIT_BIN/$tool" -n "$VFB_NODE" "$@"
}

vf_broker_ctl() {
	local dir=$1
	shift
	vf_broker__cli "$dir" rabbitmqctl "$@"
}

vf_broker_url() {
	vf_broker__load "$1" || return 1
	printf 'amqp://guest:guest@127.0.0.1:%s/\n' "$VFB_AMQP_PORT"
}

# The management plugin's HTTP API (a node started with --management), with
# the guest login: what tests/lib/vftest.py makes a test's vhost with, in
# milliseconds where each rabbitmqctl run boots an Erlang VM (about 0.6 s of
# CPU). Fails for a node started without it.
vf_broker_api_url() {
	vf_broker__load "$1" || return 1
	[[ -n ${VFB_MGMT_PORT:-} ]] || return 1
	printf 'http://guest:guest@127.0.0.1:%s/api\n' "$VFB_MGMT_PORT"
}

# True when the node's own process is alive and the node answers.
vf_broker_status() {
	local dir=$1
	vf_broker__load "$dir" || return 1
	[[ -n $VFB_PID && $(vf_broker__starttime "$VFB_PID") == "${VFB_PID_START:-}" ]] || return 1
	vf_broker_ctl "$dir" -q status >/dev/null 2>&1
}

# Ports are picked free, then bound by the node seconds later: two starts at
# once (tests running in parallel) can pick the same port, and one node then
# dies at start-up. So a start that fails is tried again with fresh ports.
vf_broker_start() {
	local try
	for try in 1 2 3; do
		if vf_broker__start_once "$@"; then
			return 0
		fi
		vf_broker__log "start attempt $try failed; trying again with fresh ports"
		sleep $((try * 2))
	done
	return 1
}

vf_broker__start_once() {
	local dir=$1 management=0
	shift
	while (($#)); do
		case $1 in
		--management) management=1 ;;
		*)
			vf_broker__log "unknown option $1"
			return 2
			;;
		esac
		shift
	done
	if [[ ! -x $VF_RABBIT_BIN/rabbitmq-server ]]; then
		vf_broker__log "$VF_RABBIT_BIN/rabbitmq-server is missing: install the Debian package rabbitmq-server"
		return 1
	fi
	if vf_broker_status "$dir"; then
		vf_broker__log "already running: node $VFB_NODE"
		vf_broker_url "$dir"
		return 0
	fi
	# A dead node from an earlier run must not leave processes behind.
	vf_broker__kill "$dir"

	mkdir -p "$dir" || return 1
	dir=$(cd "$dir" && pwd) || return 1
	# A fresh node every start: tests must not see an earlier run's queues.
	rm -rf "${dir:?}/mnesia" "${dir:?}/log" "${dir:?}/home"
	mkdir -p "$dir/mnesia" "$dir/log" "$dir/home" || return 1
	chmod 700 "$dir/home"

	local amqp_port dist_port epmd_port mgmt_port=
	amqp_port=$(vf_broker__free_port "${VF_BROKER_PORT:-5673}") || return 1
	# Distribution and epmd ports are picked far from the AMQP range; each pick
	# excludes the previous ones by starting past them.
	dist_port=$(vf_broker__free_port $((amqp_port + 20000))) || return 1
	epmd_port=$(vf_broker__free_port $((dist_port + 100))) || return 1
	if ((management)); then
		mgmt_port=$(vf_broker__free_port 15673) || return 1
	fi

	local node="vftest-$$@localhost"
	cat >"$dir/broker.env" <<-ENV
		VFB_NODE='$node'
		VFB_HOME='$dir/home'
		VFB_AMQP_PORT='$amqp_port'
		VFB_DIST_PORT='$dist_port'
		VFB_EPMD_PORT='$epmd_port'
		VFB_MGMT_PORT='$mgmt_port'
		VFB_PID=''
		VFB_EPMD_PID=''
	ENV
	# The pids follow once started; later lines override these empty ones.
	# Private config files so /etc/rabbitmq (the system service's) never applies.
	: >"$dir/rabbitmq-env.conf"
	{
		echo "listeners.tcp.default = 127.0.0.1:$amqp_port"
		echo "loopback_users.guest = true"
		if ((management)); then
			echo "management.tcp.ip = 127.0.0.1"
			echo "management.tcp.port = $mgmt_port"
			# The API is for managing the node (vhosts, users), not for
			# watching it: no message rates, and statistics every 30 s
			# rather than 5, so the plugin costs the tests next to no CPU.
			echo "management.rates_mode = none"
			echo "collect_statistics_interval = 30000"
		fi
		# Extra rabbitmq.conf lines from a test (a TLS listener, say).
		if [[ -n ${VF_BROKER_EXTRA_CONF:-} ]]; then
			cat "$VF_BROKER_EXTRA_CONF"
		fi
	} >"$dir/rabbitmq.conf"
	if ((management)); then
		echo '[rabbitmq_management].' >"$dir/enabled_plugins"
	else
		echo '[].' >"$dir/enabled_plugins"
	fi

	# Our own epmd, so stopping the node can stop it too without disturbing
	# anybody else's nodes registered with the shared one on 4369.
	setsid epmd -address 127.0.0.1 -port "$epmd_port" >"$dir/log/epmd.log" 2>&1 </dev/null &
	local epmd_pid=$!

	(
		cd "$dir" || exit 1
		exec env HOME="$dir/home" \
			ERL_EPMD_ADDRESS=127.0.0.1 ERL_EPMD_PORT="$epmd_port" \
			RABBITMQ_NODENAME="$node" \
			RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT="$amqp_port" \
			RABBITMQ_DIST_PORT="$dist_port" \
			RABBITMQ_MNESIA_BASE="$dir/mnesia" RABBITMQ_LOG_BASE="$dir/log" \
			RABBITMQ_CONF_ENV_FILE="$dir/rabbitmq-env.conf" \
			RABBITMQ_CONFIG_FILE="$dir/rabbitmq.conf" \
			RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins" \
			RABBITMQ_PID_FILE="$dir/rabbitmq.pid" \
			setsid "$VF_RABBIT_BIN/rabbitmq-server" >"$dir/log/server.out" 2>&1 </dev/null
	) &
	local pid=$!
	{
		echo "VFB_PID='$pid'"
		echo "VFB_PID_START='$(vf_broker__starttime "$pid")'"
		echo "VFB_EPMD_PID='$epmd_pid'"
		echo "VFB_EPMD_START='$(vf_broker__starttime "$epmd_pid")'"
	} >>"$dir/broker.env"

	# await_startup fails at once until the node has registered with epmd, so
	# it is retried until the overall limit.
	local limit=${VF_BROKER_TIMEOUT_S:-90} start=$SECONDS
	while :; do
		if ! kill -0 "$pid" 2>/dev/null; then
			vf_broker__log "node $node exited during start-up; last lines of $dir/log/server.out:"
			tail -n 30 "$dir/log/server.out" >&2
			vf_broker__kill "$dir"
			return 1
		fi
		if vf_broker_ctl "$dir" -q -t 10 await_startup >/dev/null 2>&1; then
			break
		fi
		if ((SECONDS - start >= limit)); then
			vf_broker__log "node $node did not start within ${limit}s; see $dir/log/"
			tail -n 30 "$dir/log/server.out" >&2
			vf_broker__kill "$dir"
			return 1
		fi
		sleep 1
	done
	vf_broker__log "node $node up in $((SECONDS - start))s on 127.0.0.1:$amqp_port (state in $dir)"
	vf_broker_url "$dir"
}

# Start time of a process in clock ticks since boot (field 22 of
# /proc/PID/stat); with the pid it names one process for good, so a pid that
# was reused after a reboot or a crash is never mistaken for ours.
vf_broker__starttime() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) } # the command name may hold spaces; fields resume after ")"
	local fields
	read -r -a fields <<<"$stat"
	printf '%s\n' "${fields[19]}"
}

# Kills what is left of the node: its setsid session (server script, beam and
# its helpers) and its private epmd. Only pids recorded in the state dir, and
# only while they are still the processes that were recorded.
vf_broker__kill() {
	local dir=$1 p
	vf_broker__load "$dir" 2>/dev/null || return 0
	if [[ -n $VFB_PID && $(vf_broker__starttime "$VFB_PID") != "${VFB_PID_START:-}" ]]; then
		VFB_PID=
	fi
	if [[ -n $VFB_EPMD_PID && $(vf_broker__starttime "$VFB_EPMD_PID") != "${VFB_EPMD_START:-}" ]]; then
		VFB_EPMD_PID=
	fi
	for p in $VFB_PID $VFB_EPMD_PID; do
		[[ -n $p ]] || continue
		# setsid made each one a session and group leader: signal the group.
		kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null || true
	done
	local i
	for ((i = 0; i < 50; i++)); do
		local alive=0
		for p in $VFB_PID $VFB_EPMD_PID; do
			[[ -n $p ]] && kill -0 -- "-$p" 2>/dev/null && alive=1
		done
		((alive)) || break
		sleep 0.1
	done
	for p in $VFB_PID $VFB_EPMD_PID; do
		if [[ -n $p ]]; then kill -KILL -- "-$p" 2>/dev/null || true; fi
	done
	return 0
}

vf_broker_stop() {
	local dir=$1
	vf_broker__load "$dir" 2>/dev/null || return 0
	if [[ -n $VFB_PID && $(vf_broker__starttime "$VFB_PID") == "${VFB_PID_START:-}" ]]; then
		vf_broker_ctl "$dir" -q -t 30 stop >/dev/null 2>&1 ||
			vf_broker__log "rabbitmqctl stop failed for $VFB_NODE; killing its processes"
	fi
	vf_broker__kill "$dir"
	echo "VFB_PID=''" >>"$dir/broker.env"
	echo "VFB_EPMD_PID=''" >>"$dir/broker.env"
	return 0
}

vf_broker__main() {
	local cmd=${1:-}
	shift || true
	local here
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	local dir=${VF_BROKER_STATE_DIR:-$here/tests/.state/broker}
	local args=()
	while (($#)); do
		case $1 in
		-d)
			dir=$2
			shift
			;;
		--)
			shift
			args+=("$@")
			break
			;;
		*) args+=("$1") ;;
		esac
		shift
	done
	case $cmd in
	start) vf_broker_start "$dir" "${args[@]}" ;;
	stop) vf_broker_stop "$dir" ;;
	status)
		if vf_broker_status "$dir"; then
			echo "running: node $VFB_NODE, $(vf_broker_url "$dir")"
		else
			echo "not running ($dir)"
			return 1
		fi
		;;
	url) vf_broker_url "$dir" ;;
	api-url) vf_broker_api_url "$dir" ;;
	ctl) vf_broker_ctl "$dir" "${args[@]}" ;;
	*)
		echo "usage: $0 start|stop|status|url|api-url|ctl [-d STATE_DIR] [--management] [-- RABBITMQCTL ARGS]" >&2
		return 2
		;;
	esac
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	set -uo pipefail
	vf_broker__main "$@"
	exit $?
fi
