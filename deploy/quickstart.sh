#!/usr/bin/env bash
# virtflow on one Debian 12 machine, from a clone of the repository:
#   bash deploy/quickstart.sh          install what is missing, build, start a broker if none
#                                      answers, start worker + relay + example webhook receiver,
#                                      submit deploy/examples/request.json and show the result
#   bash deploy/quickstart.sh --stop   stop everything this script started
#
# Packages come from tests/lib/packages.sh; the build goes to build/. The broker is
# $VF_AMQP_URL when set (checked before anything is built or started), else one on
# 127.0.0.1:5672, else a private RabbitMQ node started on loopback
# (tests/lib/broker.sh) with its state in .virtflow/broker/.
# Everything the script runs stays in the background: pids, logs, the generated
# config (from deploy/config.example.yaml) and the store are in .virtflow/; each
# program counts as started once its /readyz answers 200. When a step fails, the
# script stops what this run started (and the private broker it started) and exits 1.
# Ports on 127.0.0.1: the receiver $VF_RECEIVER_PORT (default 8808), virtflow-api
# $VF_API_PORT (8080), the worker's /metrics and probes $VF_WORKER_HTTP_PORT (9464),
# the relay's $VF_RELAY_HTTP_PORT (9465).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# shellcheck source=tests/lib/packages.sh
. tests/lib/packages.sh
# shellcheck source=tests/lib/broker.sh
. tests/lib/broker.sh

state=$root/.virtflow
broker_dir=$state/broker
services=(api receiver relay worker) # stopped in this order: consumers of events last to start
started_broker=0 # this run started the private broker
started_any=0    # this run started a service

# Stop the processes recorded in .virtflow/<name>.pid, if they are still ours.
stop_services() {
	local name pid
	for name in "${services[@]}"; do
		[[ -f $state/$name.pid ]] || continue
		pid=$(<"$state/$name.pid")
		if kill -0 "$pid" 2>/dev/null; then
			kill -TERM "$pid" 2>/dev/null || true
			for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
			kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
			echo "quickstart: stopped $name (pid $pid)"
		fi
		rm -f "$state/$name.pid"
	done
}

if [[ ${1:-} == --stop ]]; then
	stop_services
	if [[ -d $broker_dir ]]; then
		vf_broker_stop "$broker_dir"
		echo "quickstart: private broker in $broker_dir stopped"
	fi
	exit 0
elif [[ -n ${1:-} ]]; then
	echo "usage: bash deploy/quickstart.sh [--stop]" >&2
	exit 2
fi

# A step that fails leaves nothing of this run behind: the services it started
# and the private broker it started are stopped (their logs stay in .virtflow/).
on_exit() {
	local status=$?
	((status == 0)) && return 0
	if ((started_any)); then
		echo "quickstart: failed: stopping what this run started (logs stay in .virtflow/)" >&2
		stop_services >&2
	fi
	if ((started_broker)); then
		vf_broker_stop "$broker_dir" >&2 || true
		echo "quickstart: private broker in $broker_dir stopped" >&2
	fi
	return "$status"
}
trap on_exit EXIT

# The URL as virtflowctl shows it: without its password.
redact() { printf '%s' "$1" | sed -E 's|^(amqps?://[^:@/]*):[^@/]*@|\1@|'; }

echo "==> Debian packages"
# shellcheck disable=SC2119 # no options: install for real
vf_packages_ensure --run # what building and running needs; tests/run.sh installs the rest

# Before anything is built or started: a wrong VF_AMQP_URL is said in seconds.
echo "==> RabbitMQ broker"
mkdir -p "$state"
if [[ -n ${VF_AMQP_URL:-} ]]; then
	amqp_url=$VF_AMQP_URL
	if [[ $amqp_url == amqp://* ]] && ! vf_broker_answers "$amqp_url"; then
		echo "quickstart: no AMQP broker answers at $(redact "$amqp_url") (VF_AMQP_URL) within 5 s:" \
			"check its host and port, or unset VF_AMQP_URL to use a broker on 127.0.0.1:5672" \
			"or a private one; nothing was started" >&2
		exit 1
	fi
	echo "using VF_AMQP_URL"
elif vf_broker_answers amqp://guest:guest@127.0.0.1:5672/; then
	amqp_url=amqp://guest:guest@127.0.0.1:5672/
	echo "using the broker on 127.0.0.1:5672"
else
	started_broker=1
	amqp_url=$(vf_broker_start "$broker_dir")
	echo "started a private broker (state in .virtflow/broker/)"
fi
broker_shown=$(redact "$amqp_url")
echo "broker: $broker_shown"

echo "==> build (build/, RelWithDebInfo)"
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$root/build" -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
bin=$root/build/worker

echo "==> configuration (.virtflow/config.yaml, from deploy/config.example.yaml)"
port=${VF_RECEIVER_PORT:-8808}
api_port=${VF_API_PORT:-8080} # the prototype's port: its curl commands work unchanged
worker_port=${VF_WORKER_HTTP_PORT:-9464}
relay_port=${VF_RELAY_HTTP_PORT:-9465}
# A copy only its owner reads, as a real secret file must be (git keeps no
# such mode: the example in deploy/ is world-readable, and the relay warns).
secret=$state/webhook.secret
install -m 0600 "$root/deploy/example-webhook.secret" "$secret"
config=$state/config.yaml
# The example with absolute paths (relative ones would resolve against .virtflow/),
# this broker and this receiver port. The URL may hold a password: the file is private.
(
	umask 077
	sed -e "s|^  urls: .*|  urls: [\"$amqp_url\"]|" \
		-e "s|^  path: virtflow.db |  path: $state/virtflow.db |" \
		-e "s|^  path: inventory.example.yaml |  path: $root/deploy/inventory.example.yaml |" \
		-e "s|http://127.0.0.1:8808/hooks|http://127.0.0.1:$port/hooks|" \
		-e "s|^  listen: 127.0.0.1:8080 |  listen: 127.0.0.1:$api_port |" \
		-e "s|^  http_listen: 127.0.0.1:9464 |  http_listen: 127.0.0.1:$worker_port |" \
		-e "s|^  http_listen: 127.0.0.1:9465 |  http_listen: 127.0.0.1:$relay_port |" \
		-e "s|secret_files: \[example-webhook.secret\]|secret_files: [$secret]|" \
		"$root/deploy/config.example.yaml" >"$config"
)

# The broker takes this configuration's login (user, password, vhost) before
# anything starts; it declares nothing.
if ! "$bin/virtflowctl" health -c "$config" --broker --no-store >/dev/null; then
	echo "quickstart: the broker at $broker_shown refuses this configuration (above); nothing was started" >&2
	exit 1
fi

echo "==> worker, relay, virtflow-api, example receiver (logs in .virtflow/)"
stop_services # a second run starts fresh
start() { # name, command...
	local name=$1
	shift
	started_any=1
	nohup "$@" >>"$state/$name.log" 2>&1 </dev/null &
	echo $! >"$state/$name.pid"
	echo "$name: pid $!, log .virtflow/$name.log"
}
# Say why $name stopped or is not ready, with the end of its log, and fail.
not_started() { # name, what
	echo "quickstart: $1 $2; the end of .virtflow/$1.log:" >&2
	tail -n 20 "$state/$1.log" >&2
	exit 1
}
# Wait until $name answers 200 on http://127.0.0.1:$port/readyz (30 s).
wait_ready() { # name, port
	local name=$1 url=http://127.0.0.1:$2/readyz code=
	for _ in $(seq 150); do
		code=$(curl -s --max-time 2 -o "$state/$name.readyz" -w '%{http_code}' "$url" 2>/dev/null) || true
		if [[ $code == 200 ]]; then
			echo "$name: ready ($url)"
			return 0
		fi
		kill -0 "$(<"$state/$name.pid")" 2>/dev/null || not_started "$name" "exited"
		sleep 0.2
	done
	not_started "$name" "is not ready after 30 s ($url: ${code:-no answer} $(head -c 200 "$state/$name.readyz" 2>/dev/null))"
}
start worker "$bin/virtflow-worker" -c "$config"
wait_ready worker "$worker_port"
start relay "$bin/virtflow-relay" -c "$config"
wait_ready relay "$relay_port"
start api "$bin/virtflow-api" -c "$config"
wait_ready api "$api_port"
start receiver /usr/bin/python3 -u "$root/deploy/examples/webhook_receiver.py" \
	--host 127.0.0.1 --port "$port" --secret-file "$secret"
# The receiver must be listening before anything is sent to it: a delivery
# it refuses waits for the relay's next scheduled attempt (5 s, then 5 min).
receiver_up=0
for _ in $(seq 150); do
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		receiver_up=1
		break
	fi
	kill -0 "$(<"$state/receiver.pid")" 2>/dev/null || not_started receiver "exited"
	sleep 0.2
done
((receiver_up)) || not_started receiver "does not answer on 127.0.0.1:$port"
echo "receiver: listening (http://127.0.0.1:$port/hooks)"

echo "==> submit deploy/examples/request.json"
echo "\$ virtflowctl submit -c .virtflow/config.yaml -f deploy/examples/request.json --wait"
status=0
out=$("$bin/virtflowctl" submit -c "$config" -f "$root/deploy/examples/request.json" --wait --timeout 60) || status=$?
echo "$out"
task_id=$(head -n 1 <<<"$out")
if [[ $task_id != tsk_* ]]; then
	echo "quickstart: virtflowctl submit failed (exit $status, above); see .virtflow/worker.log" >&2
	exit 1
elif ((status != 0)); then
	echo "quickstart: the task did not complete (exit $status); see virtflowctl task $task_id and .virtflow/worker.log" >&2
	exit 1
fi
"$bin/virtflowctl" task -c "$config" "$task_id" | sed -n '1,/^request:/p' | sed '$d'

echo "==> the signed webhook"
event_id=
for _ in $(seq 300); do
	event_id=$(sqlite3 -readonly "$state/virtflow.db" \
		"SELECT event_id FROM deliveries WHERE json_extract(body, '$.data.task_id') = '$task_id' AND status = 'delivered'" 2>/dev/null || true)
	[[ -n $event_id ]] && grep -q "^200 $event_id " "$state/receiver.log" && break
	event_id=
	sleep 0.2
done
if [[ -z $event_id ]]; then
	echo "quickstart: no verified webhook for $task_id yet; see .virtflow/relay.log and .virtflow/receiver.log" >&2
	exit 1
fi
echo "receiver verified the signature of $event_id (task.completed for $task_id):"
grep "^200 $event_id " "$state/receiver.log"

echo "==> the prototype's HTTP API (virtflow-api on 127.0.0.1:$api_port)"
# POST a body to a route as shown; the task id of the answer into $posted.
post() { # route, body
	echo "\$ curl -X POST \"http://127.0.0.1:$api_port$1\" -H \"Content-Type: application/json\" -d '$2'"
	local accepted
	accepted=$(curl -sS -X POST "http://127.0.0.1:$api_port$1" -H "Content-Type: application/json" -d "$2")
	echo "$accepted"
	posted=$(sed -n 's/.*"task_id": *"\([^"]*\)".*/\1/p' <<<"$accepted")
	if [[ -z $posted ]]; then
		echo "quickstart: POST $1 gave no task id; see .virtflow/api.log" >&2
		exit 1
	fi
}
# GET /result of a task until it is no longer processing, as shown; into $result.
await_result() { # task id
	echo "\$ curl http://127.0.0.1:$api_port/result/$1"
	for _ in $(seq 150); do
		result=$(curl -sS "http://127.0.0.1:$api_port/result/$1")
		grep -q '"status": *"processing"' <<<"$result" || break
		sleep 0.2
	done
	echo "$result"
}
post /schedule '{"requested_cpu": 4, "requested_memory": 8192, "requested_pool": "default", "dedicated": false}'
api_task=$posted
await_result "$api_task"
if ! grep -q '"status": *"completed"' <<<"$result"; then
	echo "quickstart: the API's task $api_task did not complete; see virtflowctl task $api_task" >&2
	exit 1
fi

# UpgradeCtrl's entry point beside it: spares for an upgrade, then their release
# (spare.provisioner and spare.readiness are `none` here, so a spare is ready
# once placed). A fresh upgrade id each run: the store keeps the last run's.
upgrade="upg-quickstart-$(date +%s)"
post /spare/prepare "{\"upgrade_id\": \"$upgrade\", \"count\": 2, \"requested_cpu\": 2, \"requested_memory\": 4096}"
spare_task=$posted
await_result "$spare_task"
if ! grep -q '"state": *"ready"' <<<"$result"; then
	echo "quickstart: the spares of $spare_task are not ready; see virtflowctl task $spare_task" >&2
	exit 1
fi
post /spare/release "{\"upgrade_id\": \"$upgrade\"}"

cat <<EOT

quickstart: done. Running in the background (pids and logs in .virtflow/):
  worker (/metrics on 127.0.0.1:$worker_port), relay (127.0.0.1:$relay_port),
  virtflow-api on 127.0.0.1:$api_port, example receiver on 127.0.0.1:$port
  broker: $broker_shown
  webhook secret: .virtflow/webhook.secret (mode 0600)
Every virtflowctl command reads the configuration named by \$VIRTFLOW_CONFIG:
  export VIRTFLOW_CONFIG=$config PATH=$bin:\$PATH
Then try (README.md, "A five-minute tour"):
  virtflowctl submit --cpu 2 --memory 2048 --wait
  virtflowctl tasks
  virtflowctl task $task_id
  virtflowctl nodes
  virtflowctl stats
  virtflowctl serve                                (the web console, http://127.0.0.1:8090/)
  curl http://127.0.0.1:$api_port/v1/tasks        (the API; its reference: http://127.0.0.1:$api_port/docs)
Stop everything: bash deploy/quickstart.sh --stop
EOT
