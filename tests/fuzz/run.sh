#!/usr/bin/env bash
# Run every fuzz target of a -DVIRTFLOW_FUZZ=ON build for a bounded time,
# each from its seed corpus (tests/fuzz/seed.sh), and report per target the
# executions and whether it crashed:
#
#   bash tests/fuzz/run.sh BUILD_DIR [SECONDS_PER_TARGET] [WORK_DIR]
#
# Prints one line "fuzz_<target>: N execs, crash|ok" per target, then
# "fuzz: N targets, N crashes". Exits 1 when any target crashed (its input
# is kept in WORK_DIR/artifacts/<target>/ and the log in WORK_DIR/<target>.log:
# fix the code, then add the input to tests/fixtures/fuzz/<target>/).
#
# VF_FUZZ_SEED (default 1) fixes libFuzzer's random seed so that the short CI
# runs explore the same inputs every time: a CI run must not turn red by
# chance. Longer runs (tests/soak.sh) set VF_FUZZ_SEED=0 for a fresh seed each
# time, which is where new findings should come from.
set -euo pipefail

build=${1:?usage: run.sh BUILD_DIR [SECONDS] [WORK_DIR]}
seconds=${2:-10}
work=${3:-$build/fuzz-work}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

mkdir -p "$work"
bash "$here/seed.sh" "$work/corpus"

# Targets run VF_FUZZ_JOBS at a time (default: the number of CPUs); each
# writes its verdict to WORK_DIR/<target>.verdict, read back in name order so
# the output does not depend on which finished first.
parallel=${VF_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}

run_target() {
	local exe=$1 name rc=0 execs log
	name=$(basename "$exe")
	mkdir -p "$work/corpus/$name" "$work/artifacts/$name"
	log=$work/$name.log
	# -rss_limit_mb: an input that makes a parser balloon is a finding too.
	"$exe" -seed="${VF_FUZZ_SEED:-1}" -max_total_time="$seconds" -rss_limit_mb=1024 -timeout=10 \
		-print_final_stats=1 \
		-artifact_prefix="$work/artifacts/$name/" "$work/corpus/$name" >"$log" 2>&1 || rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -n 1)
	if ((rc != 0)); then
		{
			echo "$name: ${execs:-?} execs, crash (exit $rc; log $log)"
			grep -E '^==[0-9]+==|^SUMMARY|Test unit written' "$log" | head -n 5 | sed 's/^/    /'
		} >"$work/$name.verdict"
	else
		echo "$name: ${execs:-?} execs, ok" >"$work/$name.verdict"
	fi
}

names=()
for exe in "$build"/tests/fuzz/fuzz_*; do
	[[ -x $exe && -f $exe ]] || continue
	names+=("$(basename "$exe")")
	rm -f "$work/${names[-1]}.verdict"
	while (($(jobs -rp | wc -l) >= parallel)); do
		wait -n || true
	done
	run_target "$exe" &
done
wait

targets=0 crashes=0
for name in "${names[@]}"; do
	targets=$((targets + 1))
	if [[ ! -f $work/$name.verdict ]]; then
		echo "$name: no verdict (the runner itself failed)"
		crashes=$((crashes + 1))
		continue
	fi
	cat "$work/$name.verdict"
	if grep -q ', crash (' "$work/$name.verdict"; then
		crashes=$((crashes + 1))
	fi
done
echo "fuzz: $targets targets, $crashes crashes"
((targets > 0 && crashes == 0))
