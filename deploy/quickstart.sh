#!/usr/bin/env bash
# virtflow on one Debian 12 machine, from a clone of the repository:
#   bash deploy/quickstart.sh          install what is missing, build, start a broker if none
#                                      answers, start worker + relay + example webhook receiver,
#                                      submit deploy/examples/request.json and show the result
#   bash deploy/quickstart.sh --stop   stop everything this script started
#
# Packages come from tests/lib/packages.sh; the build goes to build/. The broker is
# $VF_AMQP_URL when set, else one on 127.0.0.1:5672, else a private RabbitMQ node
# started on loopback (tests/lib/broker.sh) with its state in .virtflow/broker/.
# Everything the script runs stays in the background: pids, logs, the generated
# config (from deploy/config.example.yaml) and the store are in .virtflow/.
# The receiver listens on 127.0.0.1:$VF_RECEIVER_PORT (default 8808).
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

echo "==> Debian packages"
# shellcheck disable=SC2119 # no options: install for real
vf_packages_ensure --run # what building and running needs; tests/run.sh installs the rest

echo "==> build (build/, RelWithDebInfo)"
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$root/build" -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
bin=$root/build/worker

echo "==> RabbitMQ broker"
mkdir -p "$state"
if [[ -n ${VF_AMQP_URL:-} ]]; then
	amqp_url=$VF_AMQP_URL
	echo "using VF_AMQP_URL"
elif vf_broker_answers amqp://guest:guest@127.0.0.1:5672/; then
	amqp_url=amqp://guest:guest@127.0.0.1:5672/
	echo "using the broker on 127.0.0.1:5672"
else
	amqp_url=$(vf_broker_start "$broker_dir")
	echo "started a private broker (state in .virtflow/broker/)"
fi

# The URL as virtflowctl shows it: without its password.
broker_shown=$(printf '%s' "$amqp_url" | sed -E 's|^(amqps?://[^:@/]*):[^@/]*@|\1@|')
echo "broker: $broker_shown"

echo "==> configuration (.virtflow/config.yaml, from deploy/config.example.yaml)"
port=${VF_RECEIVER_PORT:-8808}
api_port=${VF_API_PORT:-8080} # the prototype's port: its curl commands work unchanged
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
		-e "s|secret_files: \[example-webhook.secret\]|secret_files: [$secret]|" \
		"$root/deploy/config.example.yaml" >"$config"
)

echo "==> worker, relay, virtflow-api, example receiver (logs in .virtflow/)"
stop_services # a second run starts fresh
start() { # name, command...
	local name=$1
	shift
	nohup "$@" >>"$state/$name.log" 2>&1 </dev/null &
	echo $! >"$state/$name.pid"
	echo "$name: pid $!, log .virtflow/$name.log"
}
start worker "$bin/virtflow-worker" -c "$config"
start relay "$bin/virtflow-relay" -c "$config"
start api "$bin/virtflow-api" -c "$config"
start receiver /usr/bin/python3 -u "$root/deploy/examples/webhook_receiver.py" \
	--host 127.0.0.1 --port "$port" --secret-file "$secret"

# Ready when the store answers and the broker takes a login.
for _ in $(seq 150); do
	"$bin/virtflowctl" health -c "$config" --broker >/dev/null 2>&1 && break
	for name in "${services[@]}"; do
		if ! kill -0 "$(<"$state/$name.pid")" 2>/dev/null; then
			echo "quickstart: $name exited; the end of .virtflow/$name.log:" >&2
			tail -n 20 "$state/$name.log" >&2
			exit 1
		fi
	done
	sleep 0.2
done

# The receiver must be listening before anything is sent to it: a delivery
# it refuses waits for the relay's next scheduled attempt (5 s, then 5 min).
receiver_up=0
for _ in $(seq 150); do
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		receiver_up=1
		break
	fi
	sleep 0.2
done
if ((!receiver_up)); then
	echo "quickstart: the example receiver does not answer on 127.0.0.1:$port; the end of .virtflow/receiver.log:" >&2
	tail -n 20 "$state/receiver.log" >&2
	exit 1
fi

echo "==> submit deploy/examples/request.json"
echo "\$ virtflowctl submit -c .virtflow/config.yaml -f deploy/examples/request.json --wait"
status=0
out=$("$bin/virtflowctl" submit -c "$config" -f "$root/deploy/examples/request.json" --wait --timeout 60) || status=$?
echo "$out"
task_id=$(head -n 1 <<<"$out")
if ((status != 0)); then
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
api_up=0
for _ in $(seq 150); do
	if curl -fsS "http://127.0.0.1:$api_port/readyz" >/dev/null 2>&1; then
		api_up=1
		break
	fi
	sleep 0.2
done
if ((!api_up)); then
	echo "quickstart: virtflow-api is not ready on 127.0.0.1:$api_port; the end of .virtflow/api.log:" >&2
	tail -n 20 "$state/api.log" >&2
	exit 1
fi
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
  worker, relay, virtflow-api on 127.0.0.1:$api_port, example receiver on 127.0.0.1:$port
  broker: $broker_shown
  webhook secret: .virtflow/webhook.secret (mode 0600)
Try:
  build/worker/virtflowctl submit -c .virtflow/config.yaml --cpu 2 --memory 2048 --wait
  build/worker/virtflowctl tasks -c .virtflow/config.yaml
  build/worker/virtflowctl task -c .virtflow/config.yaml $task_id
  build/worker/virtflowctl nodes -c .virtflow/config.yaml
  build/worker/virtflowctl stats -c .virtflow/config.yaml
  curl http://127.0.0.1:$api_port/v1/tasks        (the API; /docs in a browser)
Stop everything: bash deploy/quickstart.sh --stop
EOT
