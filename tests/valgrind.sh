#!/usr/bin/env bash
# Run every C unit test of a plain (not sanitizer) build under Valgrind's
# memcheck: any invalid read or write, use of uninitialised memory or leak
# fails the run.
#
#   bash tests/valgrind.sh BUILD_DIR
#
# Tests run from the source tests/ folder, as CTest runs them, with the same
# environment (a broker test skips itself, exit 77, without VF_AMQP_URL).
# Prints one line per test, then "valgrind: N passed, N failed, N skipped".
set -euo pipefail

build=${1:?usage: valgrind.sh BUILD_DIR}
build=$(cd "$build" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
logs=$build/valgrind
mkdir -p "$logs"

if ! command -v valgrind >/dev/null 2>&1; then
	echo "valgrind: not installed (Debian package valgrind)" >&2
	exit 1
fi

# Tests run VF_VALGRIND_JOBS at a time (default: the number of CPUs; each
# test is isolated as under CTest's -j: its own temporary files, database and
# broker names). Each writes its verdict to LOGS/<test>.verdict, read back in
# name order so the output does not depend on which finished first.
parallel=${VF_VALGRIND_JOBS:-$(nproc 2>/dev/null || echo 1)}

run_test() {
	local exe=$1 name log rc=0
	name=$(basename "$exe")
	log=$logs/$name.log
	# --error-exitcode 99: a memcheck error, told apart from a failing CHECK (1)
	# and a skip (77). Leaks of any kind count; still-reachable memory
	# (libcurl's and OpenSSL's global state) does not.
	# tests/valgrind.supp lists the few leaks that are on purpose.
	# --child-silent-after-fork: a test's forked children (concurrent
	# claimers, a process that dies at once) _exit with what they inherited
	# from the parent still allocated, by design; the parent is checked.
	(cd "$here" && VF_UNDER_VALGRIND=1 valgrind --quiet --child-silent-after-fork=yes \
		--leak-check=full --show-leak-kinds=definite,indirect,possible \
		--errors-for-leak-kinds=definite,indirect,possible --error-exitcode=99 \
		--track-origins=yes --num-callers=64 --suppressions="$here/valgrind.supp" "$exe") >"$log" 2>&1 || rc=$?
	case $rc in
	0) echo "$name: ok" ;;
	77) echo "$name: skipped" ;;
	99)
		echo "$name: MEMCHECK ERRORS (log $log)"
		grep -E '^==[0-9]+== (Invalid|Conditional|Use of|.*definitely|.*indirectly|.*possibly)' "$log" |
			head -n 5 | sed 's/^/    /'
		;;
	*)
		echo "$name: FAILED with exit $rc (log $log)"
		tail -n 5 "$log" | sed 's/^/    /'
		;;
	esac >"$logs/$name.verdict"
}

names=()
for exe in "$build"/tests/test_*; do
	[[ -x $exe && -f $exe ]] || continue
	names+=("$(basename "$exe")")
	rm -f "$logs/${names[-1]}.verdict"
	while (($(jobs -rp | wc -l) >= parallel)); do
		wait -n || true
	done
	run_test "$exe" &
done
wait

passed=0 failed=0 skipped=0
for name in "${names[@]}"; do
	verdict=$logs/$name.verdict
	if [[ ! -f $verdict ]]; then
		failed=$((failed + 1))
		echo "$name: no verdict (the runner itself failed)"
		continue
	fi
	cat "$verdict"
	case $(head -n 1 "$verdict") in
	*": ok") passed=$((passed + 1)) ;;
	*": skipped") skipped=$((skipped + 1)) ;;
	*) failed=$((failed + 1)) ;;
	esac
done
echo "valgrind: $passed passed, $failed failed, $skipped skipped"
((failed == 0 && passed > 0))
