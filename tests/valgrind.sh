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

passed=0 failed=0 skipped=0
for exe in "$build"/tests/test_*; do
	[[ -x $exe && -f $exe ]] || continue
	name=$(basename "$exe")
	log=$logs/$name.log
	rc=0
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
	0)
		passed=$((passed + 1))
		echo "$name: ok"
		;;
	77)
		skipped=$((skipped + 1))
		echo "$name: skipped"
		;;
	99)
		failed=$((failed + 1))
		echo "$name: MEMCHECK ERRORS (log $log)"
		grep -E '^==[0-9]+== (Invalid|Conditional|Use of|.*definitely|.*indirectly|.*possibly)' "$log" |
			head -n 5 | sed 's/^/    /'
		;;
	*)
		failed=$((failed + 1))
		echo "$name: FAILED with exit $rc (log $log)"
		tail -n 5 "$log" | sed 's/^/    /'
		;;
	esac
done
echo "valgrind: $passed passed, $failed failed, $skipped skipped"
((failed == 0 && passed > 0))
