#!/usr/bin/env bash
# THE test command: installs what is missing, makes sure a RabbitMQ broker
# answers, builds (plain, then with ASan+UBSan) and runs CTest in each build.
#
#   bash tests/run.sh [--quick] [--dry-run]
#     --quick    only the plain build (build/), no sanitizer build
#     --dry-run  say what would be installed, which broker would be used and
#                what would be built, and change nothing
#
# Broker: $VF_AMQP_URL when set (with $VF_RABBITMQCTL, a rabbitmqctl command
# prefix for it, if you have one, and $VF_RABBITMQ_API, its management HTTP
# API's URL with a login, if it has one); else a private node on loopback
# (tests/lib/broker.sh), stopped again when this script ends. A broker that
# already answers on 127.0.0.1:5672 is deliberately NOT used: tests create
# and delete vhosts, queues and exchanges, and must never touch a broker that
# holds someone's real messages. Tests get VF_AMQP_URL and VF_RABBITMQCTL.
# PostgreSQL: $VF_PG_URL when set (a database the tests may create schemas
# in); else a private server on loopback (tests/lib/postgres.sh), stopped
# again when this script ends. Store tests run on it as well as on SQLite.
# Ends with a line "N passed, N failed" summed over the CTest runs.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=tests/lib/packages.sh
. "$root/tests/lib/packages.sh"
# shellcheck source=tests/lib/broker.sh
. "$root/tests/lib/broker.sh"
# shellcheck source=tests/lib/postgres.sh
. "$root/tests/lib/postgres.sh"

quick=0 dry_run=0
for arg in "$@"; do
	case $arg in
	--quick) quick=1 ;;
	--dry-run) dry_run=1 ;;
	-h | --help)
		sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "run.sh: unknown option $arg (try --help)" >&2
		exit 2
		;;
	esac
done

started=$SECONDS
step() { printf '\n==> %s\n' "$*"; }

step "Debian packages"
if ((dry_run)); then
	vf_packages_ensure --dry-run
else
	vf_packages_ensure
fi


broker_dir=
postgres_dir=
cleanup() {
	local rc=$?
	if [[ -n $broker_dir ]]; then
		echo "==> stopping the private broker" >&2
		vf_broker_stop "$broker_dir" || true
		rm -rf "$broker_dir"
	fi
	if [[ -n $postgres_dir ]]; then
		echo "==> stopping the private PostgreSQL server" >&2
		vf_postgres_stop "$postgres_dir" || true
		rm -rf "$postgres_dir"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

step "RabbitMQ broker"
if [[ -n ${VF_AMQP_URL:-} ]]; then
	echo "using VF_AMQP_URL from the environment"
elif ((dry_run)); then
	echo "would start a private broker on loopback (tests/lib/broker.sh)"
else
	broker_dir=$(mktemp -d "${TMPDIR:-/tmp}/vf-broker.XXXXXX")
	if ! VF_AMQP_URL=$(vf_broker_start "$broker_dir" --management); then
		echo "run.sh: could not start a private RabbitMQ node (logs above)" >&2
		exit 1
	fi
	export VF_AMQP_URL
	# Each broker test gets its own vhost through the HTTP API (a few
	# milliseconds) and runs what else it needs through rabbitmqctl.
	VF_RABBITMQ_API=$(vf_broker_api_url "$broker_dir")
	export VF_RABBITMQ_API
	export VF_RABBITMQCTL="bash $root/tests/lib/broker.sh ctl -d $broker_dir --"
fi
echo "VF_AMQP_URL=${VF_AMQP_URL:-(unset)}"

step "PostgreSQL server"
if [[ -n ${VF_PG_URL:-} ]]; then
	echo "using VF_PG_URL from the environment"
elif ((dry_run)); then
	echo "would start a private PostgreSQL server on loopback (tests/lib/postgres.sh)"
else
	postgres_dir=$(mktemp -d "${TMPDIR:-/tmp}/vf-postgres.XXXXXX")
	if ! VF_PG_URL=$(vf_postgres_start "$postgres_dir"); then
		echo "run.sh: could not start a private PostgreSQL server (logs above)" >&2
		exit 1
	fi
	export VF_PG_URL
fi
echo "VF_PG_URL=${VF_PG_URL:-(unset)}"

jobs=$(nproc 2>/dev/null || echo 2)
# Integration tests mostly wait (on a broker, a lease, a retry tier), so CTest
# runs twice as many at once as there are CPUs (measured, 2026-11-28: the
# plain build's CTest used 476 s of CPU in 448 s on two CPUs); the few that
# keep CPUs busy (a broker cluster, a packaging build, Chromium) say so with
# the PROCESSORS property (tests/CMakeLists.txt), which CTest counts against
# this.
ctest_jobs=${VF_CTEST_JOBS:-$((jobs * 2))}
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

builds=("build|-DCMAKE_BUILD_TYPE=RelWithDebInfo")
if ((!quick)); then
	builds+=("build-asan|-DVIRTFLOW_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug")
fi

# Faults and abuse: the plain build's unit tests under Valgrind, then every
# fuzz target (a clang build in build-fuzz/) for VF_FUZZ_SECONDS (10) each.
# A memcheck error or a fuzz crash fails the run.
check_valgrind() { bash "$root/tests/valgrind.sh" "$root/build"; }
check_fuzz() {
	CC=clang cmake -S "$root" -B "$root/build-fuzz" -DVIRTFLOW_FUZZ=ON -DBUILD_TESTING=OFF \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo >"$state_dir/build-fuzz.configure.log" 2>&1 &&
		cmake --build "$root/build-fuzz" -j"$jobs" --target fuzz_targets &&
		bash "$root/tests/fuzz/run.sh" "$root/build-fuzz" "${VF_FUZZ_SECONDS:-10}"
}
extra_checks=(valgrind)
((quick)) || extra_checks+=(fuzz)
# Each check's output goes to its log, its verdict to <name>.verdict; they
# run after the builds' CTest, not beside it: the sanitizer build's tests
# under a CPU-bound neighbour (a fuzz run takes both CPUs) fell behind the
# paces some of them check (test_retention's flat store), so the few minutes
# are not saved at the price of a run that depends on the load.
run_extra_checks() {
	local name
	for name in "${extra_checks[@]}"; do
		if "check_$name" >"$state_dir/$name.log" 2>&1; then
			echo passed >"$state_dir/$name.verdict"
		else
			echo FAILED >"$state_dir/$name.verdict"
		fi
	done
}

total_passed=0 total_failed=0 total_skipped=0
summary=()
state_dir=$root/tests/.state
mkdir -p "$state_dir"

for entry in "${builds[@]}"; do
	name=${entry%%|*}
	read -r -a flags <<<"${entry#*|}"
	dir=$root/$name
	step "$name: configure and build (${flags[*]}, -j$jobs)"
	if ((dry_run)); then
		echo "would run: cmake -S $root -B $dir ${flags[*]} && cmake --build $dir -j$jobs && ctest --output-on-failure"
		continue
	fi
	if ! cmake -S "$root" -B "$dir" "${flags[@]}" >"$state_dir/$name.configure.log" 2>&1; then
		cat "$state_dir/$name.configure.log"
		summary+=("$name: CMake configure FAILED")
		total_failed=$((total_failed + 1))
		continue
	fi
	if ! cmake --build "$dir" -j"$jobs"; then
		summary+=("$name: build FAILED")
		total_failed=$((total_failed + 1))
		continue
	fi

	step "$name: ctest"
	log=$state_dir/$name.ctest.log
	ctest_rc=0
	# The sanitizer build leaves out the tests labelled plain_only: long runs of
	# broker-cluster behaviour whose C paths the other tests already cover
	# under the sanitizers (tests/CMakeLists.txt says which and why).
	exclude=()
	[[ $name == build-asan ]] && exclude=(-LE plain_only)
	(cd "$dir" && ctest --output-on-failure --no-tests=error -j"$ctest_jobs" "${exclude[@]}") 2>&1 |
		tee "$log" || ctest_rc=$?
	# "100% tests passed, 0 tests failed out of 7" or "71% tests passed, 2 tests failed out of 7"
	line=$(grep -E '[0-9]+ tests failed out of [0-9]+' "$log" | tail -n 1 || true)
	skipped=$(grep -cE '^[[:space:]]*[0-9]+ - .*\(Skipped\)$' "$log" || true)
	if [[ $line =~ ([0-9]+)\ tests\ failed\ out\ of\ ([0-9]+) ]]; then
		failed=${BASH_REMATCH[1]}
		passed=$((BASH_REMATCH[2] - failed - skipped))
	else
		# No summary: no tests found, or ctest itself broke.
		failed=1 passed=0
	fi
	if ((ctest_rc != 0 && failed == 0)); then
		failed=1
	fi
	total_passed=$((total_passed + passed))
	total_failed=$((total_failed + failed))
	total_skipped=$((total_skipped + skipped))
	summary+=("$name: $passed passed, $failed failed, $skipped skipped (log: ${log#"$root"/})")
done


if ((dry_run)); then
	for name in "${extra_checks[@]}"; do
		step "$name"
		declare -f "check_$name" | sed '1,2d;$d'
	done
else
	rm -f "$state_dir"/*.verdict
	run_extra_checks
fi
if ((!dry_run)); then
	for name in "${extra_checks[@]}"; do
		step "$name"
		log=$state_dir/$name.log
		cat "$log"
		if [[ $(cat "$state_dir/$name.verdict" 2>/dev/null) == passed ]]; then
			total_passed=$((total_passed + 1))
			summary+=("$name: passed (log: ${log#"$root"/})")
		else
			total_failed=$((total_failed + 1))
			summary+=("$name: FAILED (log: ${log#"$root"/})")
		fi
	done
fi

if ((dry_run)); then
	echo
	echo "dry run: nothing was installed, started or built"
	exit 0
fi

# Stopped before the summary so that the summary's last line is the verdict.
if [[ -n $broker_dir ]]; then
	step "stopping the private broker"
	vf_broker_stop "$broker_dir" || true
	rm -rf "$broker_dir"
	broker_dir=
fi
if [[ -n $postgres_dir ]]; then
	step "stopping the private PostgreSQL server"
	vf_postgres_stop "$postgres_dir" || true
	rm -rf "$postgres_dir"
	postgres_dir=
fi

step "Summary ($((SECONDS - started)) s)"
printf '  %s\n' "${summary[@]}"
if ((total_skipped > 0)); then
	echo "  ($total_skipped skipped tests are counted neither as passed nor as failed)"
fi
echo "$total_passed passed, $total_failed failed"
((total_failed == 0))
