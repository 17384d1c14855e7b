#!/usr/bin/env bash
# The long fault run (not part of tests/run.sh): minutes of load on worker,
# relay and receivers with kill -9 of worker and relay at random points,
# broker restarts, inventory garbage and a receiver that never answers; then
# the audit. Also runs every fuzz target for longer than CI does.
#
#   bash tests/soak.sh [SECONDS] [FUZZ_SECONDS_PER_TARGET]
#
# Defaults: 300 s of faults, 60 s per fuzz target. Uses build/ (or
# $VF_BUILD_DIR) and build-fuzz/ (or $VF_FUZZ_BUILD_DIR), built here when missing.
# Broker: $VF_AMQP_URL with
# $VF_RABBITMQCTL when set (broker restarts are then forced connection
# closes: a shared broker is never stopped); else a private node on loopback
# which is really restarted (stop_app/start_app).
# Prints the figures: tasks and events processed, faults by kind, tasks
# lost, duplicate placements, events never delivered (targets 0), fuzz
# executions and crashes per target (target 0 crashes).
set -euo pipefail

seconds=${1:-300}
fuzz_seconds=${2:-60}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=tests/lib/broker.sh
. "$root/tests/lib/broker.sh"
py=/usr/bin/python3 # Debian's, with python3-pika

build=${VF_BUILD_DIR:-$root/build}
if [[ ! -x $build/worker/virtflow-worker ]]; then
	cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build "$build" -j"$(nproc)"
fi
export VF_BUILD_DIR=$build VF_SOURCE_DIR=$root

broker_dir=
cleanup() {
	local rc=$?
	if [[ -n $broker_dir ]]; then
		vf_broker_stop "$broker_dir" || true
		rm -rf "$broker_dir"
	fi
	exit "$rc"
}
trap cleanup EXIT
if [[ -z ${VF_AMQP_URL:-} ]]; then
	broker_dir=$(mktemp -d "${TMPDIR:-/tmp}/vf-soak-broker.XXXXXX")
	VF_AMQP_URL=$(vf_broker_start "$broker_dir")
	export VF_AMQP_URL VF_RABBITMQCTL="bash $root/tests/lib/broker.sh ctl -d $broker_dir --"
	export VF_SOAK_OWN_BROKER=1
fi

soak_rc=0
"$py" "$root/tests/lib/soak.py" "$seconds" || soak_rc=$?

echo
echo "fuzzing, $fuzz_seconds s per target"
fuzz_rc=0
fuzz_build=${VF_FUZZ_BUILD_DIR:-$root/build-fuzz}
if [[ ! -d $fuzz_build/tests/fuzz ]]; then
	CC=clang cmake -S "$root" -B "$fuzz_build" -DVIRTFLOW_FUZZ=ON -DBUILD_TESTING=OFF \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$fuzz_build" -j"$(nproc)" >/dev/null
VF_FUZZ_SEED=${VF_FUZZ_SEED:-0} bash "$root/tests/fuzz/run.sh" "$fuzz_build" "$fuzz_seconds" "$fuzz_build/soak-work" || fuzz_rc=$?

((soak_rc == 0 && fuzz_rc == 0))
