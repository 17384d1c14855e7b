#!/usr/bin/env bash
# A private PostgreSQL server for tests and local runs, from Debian's
# postgresql package without touching the system cluster: initdb in a state
# directory of its own, run as an unprivileged user (the server refuses root:
# as root this script runs it as `postgres`, the user Debian's package
# creates), listening on 127.0.0.1 only on a free port, its unix socket in the
# state directory. Trust authentication for the test user `virtflow` on
# loopback: this server holds nothing but test data and is never exposed.
# Members of the role vfpw must give a password (scram-sha-256), so tests can
# check store.password_file: CREATE ROLE x LOGIN PASSWORD '...' IN ROLE vfpw.
#
# As a script:
#   tests/lib/postgres.sh start  [-d STATE_DIR]   prints the URL of database virtflow
#   tests/lib/postgres.sh stop   [-d STATE_DIR]
#   tests/lib/postgres.sh status [-d STATE_DIR]   exit 0 when running
#   tests/lib/postgres.sh url    [-d STATE_DIR]
#   tests/lib/postgres.sh psql   [-d STATE_DIR] -- ARGS...   psql on database virtflow
# Sourced (bash), the same as functions taking the state dir first:
#   vf_postgres_start DIR; vf_postgres_stop DIR; vf_postgres_status DIR;
#   vf_postgres_url DIR; vf_postgres_psql DIR ARGS...
# The default state dir is $VF_POSTGRES_STATE_DIR, else tests/.state/postgres.
#
# Environment knobs: VF_POSTGRES_PORT (preferred port, default 5433),
# VF_POSTGRES_BIN (server binaries, default the newest /usr/lib/postgresql/*/bin),
# VF_POSTGRES_SERVER_OPTS (more server options, e.g. "-c ssl=on -c ssl_cert_file=...";
# files the server reads must be readable by its user).

VF_POSTGRES_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/broker.sh
. "$VF_POSTGRES_LIB_DIR/broker.sh" # vf_broker__free_port

vf_postgres__log() { printf 'postgres: %s\n' "$*" >&2; }

vf_postgres__bin() {
	if [[ -n ${VF_POSTGRES_BIN:-} ]]; then
		printf '%s\n' "$VF_POSTGRES_BIN"
		return 0
	fi
	local dirs=(/usr/lib/postgresql/*/bin)
	[[ -x ${dirs[-1]}/initdb ]] || return 1
	printf '%s\n' "${dirs[-1]}"
}

# Runs a command as the server's user: ourselves, or `postgres` for root.
vf_postgres__as_owner() {
	if ((EUID == 0)); then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

vf_postgres__load() {
	[[ -f $1/postgres.env ]] || return 1
	# shellcheck disable=SC1091
	. "$1/postgres.env"
}

vf_postgres_url() {
	vf_postgres__load "$1" || return 1
	printf 'postgresql://virtflow@127.0.0.1:%s/virtflow\n' "$VFP_PORT"
}

vf_postgres_status() {
	local dir=$1 bin
	vf_postgres__load "$dir" || return 1
	bin=$(vf_postgres__bin) || return 1
	"$bin/pg_isready" -q -h 127.0.0.1 -p "$VFP_PORT" -U virtflow
}

vf_postgres_psql() {
	local dir=$1
	shift
	vf_postgres__load "$dir" || {
		vf_postgres__log "no private server in $dir"
		return 1
	}
	psql -X -q -v ON_ERROR_STOP=1 "$(vf_postgres_url "$dir")" "$@"
}

vf_postgres_start() {
	local dir=$1 bin port try
	bin=$(vf_postgres__bin) || {
		vf_postgres__log "no PostgreSQL server binaries (install Debian's postgresql)"
		return 1
	}
	mkdir -p "$dir" || return 1
	dir=$(cd "$dir" && pwd)
	if ((EUID == 0)); then
		chown postgres: "$dir" || return 1
	fi
	chmod 700 "$dir"
	if [[ ! -f $dir/data/PG_VERSION ]]; then
		# As docs/operations.md ("PostgreSQL store") says to create the database: SQL_ASCII keeps strings
		# byte for byte as SQLite does (a UTF8 database refuses invalid
		# UTF-8), and the C locale sorts text byte by byte.
		vf_postgres__as_owner "$bin/initdb" -D "$dir/data" -U virtflow --auth=trust \
			--encoding=SQL_ASCII --locale=C >"$dir/initdb.log" 2>&1 || {
			cat "$dir/initdb.log" >&2
			return 1
		}
		# Members of role vfpw must give their password (tests of
		# store.password_file); everyone else is trusted on loopback.
		printf '%s\n' 'local all all trust' \
			'host all +vfpw 127.0.0.1/32 scram-sha-256' \
			'host all all 127.0.0.1/32 trust' >"$dir/data/pg_hba.conf"
	fi
	# A port picked free may be taken before the server binds it: try again.
	for try in 1 2 3; do
		port=$(vf_broker__free_port "${VF_POSTGRES_PORT:-5433}") || return 1
		if vf_postgres__as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
			-o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$dir ${VF_POSTGRES_SERVER_OPTS:-}" \
			start >/dev/null; then
			break
		fi
		vf_postgres__log "start attempt $try failed (log: $dir/server.log)"
		port=
		sleep $((try * 2))
	done
	[[ -n $port ]] || return 1
	printf 'VFP_PORT=%s\n' "$port" >"$dir/postgres.env"
	local sql
	for sql in 'CREATE DATABASE virtflow' 'CREATE ROLE vfpw NOLOGIN'; do
		if ! "$bin/psql" -X -q -h 127.0.0.1 -p "$port" -U virtflow -d postgres \
			-c "$sql" >/dev/null 2>"$dir/createdb.log" &&
			! grep -q 'already exists' "$dir/createdb.log"; then
			cat "$dir/createdb.log" >&2
			return 1
		fi
	done
	vf_postgres__log "server up on 127.0.0.1:$port (state in $dir)"
	vf_postgres_url "$dir"
}

vf_postgres_stop() {
	local dir=$1 bin
	[[ -f $dir/data/PG_VERSION ]] || return 0
	bin=$(vf_postgres__bin) || return 0
	if [[ -f $dir/data/postmaster.pid ]]; then
		vf_postgres__as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null ||
			vf_postgres__log "pg_ctl stop failed (log: $dir/server.log)"
	fi
	return 0
}

vf_postgres__main() {
	local cmd=${1:-}
	shift || true
	local here
	here=$(cd "$VF_POSTGRES_LIB_DIR/../.." && pwd)
	local dir=${VF_POSTGRES_STATE_DIR:-$here/tests/.state/postgres}
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
	start) vf_postgres_start "$dir" ;;
	stop) vf_postgres_stop "$dir" ;;
	status)
		if vf_postgres_status "$dir"; then
			echo "running: $(vf_postgres_url "$dir")"
		else
			echo "not running ($dir)"
			return 1
		fi
		;;
	url) vf_postgres_url "$dir" ;;
	psql) vf_postgres_psql "$dir" "${args[@]}" ;;
	*)
		echo "usage: $0 start|stop|status|url|psql [-d STATE_DIR] [-- PSQL ARGS]" >&2
		return 2
		;;
	esac
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	set -uo pipefail
	vf_postgres__main "$@"
	exit $?
fi
