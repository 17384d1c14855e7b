#!/usr/bin/env bash
# The Debian 12 packages virtflow needs to build, test and run, in ONE place:
# tests/run.sh and deploy/quickstart.sh both source this file. Add a package
# here, never in a script of its own.
#
#   vf_packages_missing [--run]      prints the missing ones, one per line
#   vf_packages_ensure [--dry-run] [--run]
#                                    installs the missing ones (apt-get update
#                                    once, only when something is missing);
#                                    as root, else through sudo, else explains
#                                    what to install and fails
#
# --run: only what building and running virtflow needs (VF_DEBIAN_PACKAGES,
# what quickstart installs); without it the test suite's packages too
# (VF_DEBIAN_TEST_PACKAGES: Chromium, PostgreSQL, clang, valgrind...).

# Building and running: the toolchain, the libraries, a broker to start when
# none answers, and what deploy/quickstart.sh itself calls.
VF_DEBIAN_PACKAGES=(
	build-essential      # gcc (with libasan/libubsan for the sanitizer build), make
	cmake
	pkg-config
	librabbitmq-dev      # rabbitmq-c
	libjansson-dev
	libcurl4-openssl-dev
	libsqlite3-dev
	libpq-dev            # libpq: the PostgreSQL store (store.url)
	libyaml-dev
	libssl-dev           # HMAC-SHA256 for webhook signatures
	libmicrohttpd-dev    # /metrics, /healthz, /readyz and the console (virtflowctl serve)
	libpcre2-dev         # request patterns in RE2 syntax (node regex, vmid patterns)
	libsystemd-dev       # sd_notify: Type=notify readiness and reloads (common/config/notify.c); libsystemd0 at run time
	libnats-dev          # the NATS C client: virtflow-nats publishes events to JetStream (worker/nats/); libnats3.4 at run time
	rabbitmq-server      # the private broker (quickstart's when none answers, the tests'; tests/lib/broker.sh)
	python3              # quickstart's example webhook receiver; broker port picking; test drivers
	sqlite3              # operators' view of the store; quickstart finds its webhook with it; tests inspect it
	ca-certificates      # libcurl verifying https:// receivers and APIs
	curl                 # the prototype's curl commands (docs/api.md); test_api_prototype runs them verbatim
)

# The test suite's own (tests/run.sh installs them; quickstart does not).
VF_DEBIAN_TEST_PACKAGES=(
	python3-pika         # AMQP client of the integration tests and benches (a plain client, as users have)
	python3-jsonschema   # tests/integration/test_schemas, tests/lib/validate_event.py
	python3-hypothesis   # tests/integration/test_api_openapi_property: requests generated from schema/openapi.json
	python3-yaml         # tests/integration/test_deploy_files parses compose, manifests
	dpkg-dev             # dpkg-shlibdeps: the .deb's Depends (tests/integration/test_deb, cpack)
	groff-base           # man pages rendered in tests (tests/integration/test_man_pages)
	zsh                  # the zsh completion parsed and run (tests/integration/test_ctl_zsh_completion)
	chromium             # headless browser: the console tests load each page in it
	postgresql           # the private test server (tests/lib/postgres.sh); psql reads it in tests
	valgrind             # tests/valgrind.sh: unit tests under memcheck
	docker-compose       # test_deploy_files: `docker-compose config` accepts docker-compose.yml (Compose v1)
	'kubernetes-client|kubectl' # test_deploy_files: `kubectl kustomize deploy/kubernetes`; Debian's, or Kubernetes' own apt package
	prometheus           # promtool: test_alert_rules runs `promtool test rules` on deploy/prometheus/rules.yml (19 MB; its daemon is not started by the tests)
	clang                # tests/fuzz: libFuzzer targets (-DVIRTFLOW_FUZZ=ON)
	libclang-rt-14-dev   # libFuzzer's runtime for clang 14 (-fsanitize=fuzzer)
	openssl              # test_api_tls makes a self-signed certificate with the openssl command
	nats-server          # the private NATS server with JetStream of test_nats_sink and bench_nats (tests/lib/nats.sh); 2.9.10 in Debian 12
)

# The list for [--run] (or not), in VF_PACKAGES_CHOSEN.
vf_packages_choose() {
	VF_PACKAGES_CHOSEN=("${VF_DEBIAN_PACKAGES[@]}")
	[[ ${1:-} == --run ]] || VF_PACKAGES_CHOSEN+=("${VF_DEBIAN_TEST_PACKAGES[@]}")
}

vf_packages_missing() {
	local entry pkg status found
	vf_packages_choose "${1:-}"
	for entry in "${VF_PACKAGES_CHOSEN[@]}"; do
		# "a|b": either package will do (both ship the same program); the
		# first is the one installed when neither is.
		found=0
		for pkg in ${entry//|/ }; do
			status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
			if [[ $status == "install ok installed" ]]; then
				found=1
				break
			fi
		done
		if ((!found)); then
			printf '%s\n' "${entry%%|*}"
		fi
	done
}

vf_packages_ensure() {
	local dry_run=0 set= arg
	for arg in "$@"; do
		case $arg in
		--dry-run) dry_run=1 ;;
		--run) set=--run ;;
		*)
			echo "vf_packages_ensure: unknown option $arg" >&2
			return 2
			;;
		esac
	done
	vf_packages_choose "$set"
	if ! command -v dpkg-query >/dev/null 2>&1; then
		echo "packages: dpkg-query not found; this script expects Debian 12. Install the equivalents of:" >&2
		echo "  ${VF_PACKAGES_CHOSEN[*]}" >&2
		return 1
	fi
	local missing
	mapfile -t missing < <(vf_packages_missing "$set")
	if ((${#missing[@]} == 0)); then
		echo "packages: all ${#VF_PACKAGES_CHOSEN[@]} Debian packages are installed"
		return 0
	fi
	echo "packages: missing: ${missing[*]}"
	local sudo=()
	if ((EUID != 0)); then
		if ! command -v sudo >/dev/null 2>&1; then
			echo "packages: not root and sudo is not available. As root, run:" >&2
			echo "  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}" >&2
			return 1
		fi
		# Without a terminal sudo cannot ask for a password: fail rather than hang.
		if [[ -t 0 ]]; then sudo=(sudo); else sudo=(sudo -n); fi
	fi
	local update=("${sudo[@]}" apt-get update)
	local install=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y
		--no-install-recommends "${missing[@]}")
	if ((dry_run)); then
		echo "packages: would run: ${update[*]}"
		echo "packages: would run: ${install[*]}"
		return 0
	fi
	if ! "${update[@]}" || ! "${install[@]}"; then
		echo "packages: installing failed. Install these yourself, then run again:" >&2
		echo "  ${missing[*]}" >&2
		return 1
	fi
}
