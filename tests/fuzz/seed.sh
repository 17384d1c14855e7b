#!/usr/bin/env bash
# Build the seed corpora of the fuzz targets from tests/fixtures, one folder
# per target under DEST (created; existing files are kept, so a corpus that
# grew in an earlier run keeps growing):
#
#   bash tests/fuzz/seed.sh DEST
#
# Inputs that once crashed a target live in tests/fixtures/fuzz/<target>/ and
# are always part of its seeds, so every run replays them first.
set -euo pipefail

dest=${1:?usage: seed.sh DEST}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fx=$root/tests/fixtures

# add TARGET FILE...: copy the files that exist into DEST/TARGET.
add() {
	local target=$1
	shift
	mkdir -p "$dest/$target"
	local f
	for f in "$@"; do
		[[ -f $f ]] || continue
		cp "$f" "$dest/$target/$(basename "$(dirname "$f")")-$(basename "$f")"
	done
}

add fuzz_request "$fx"/requests/valid/*.json "$fx"/requests/invalid/*.json
add fuzz_task_message "$fx"/requests/valid/*.json "$fx"/requests/invalid/*.json
add fuzz_event "$fx"/schema/event/valid/*.json "$fx"/schema/event/invalid/*.json
add fuzz_config "$fx"/config/valid/*.yaml "$fx"/config/invalid/*.yaml
add fuzz_inventory_file "$fx"/inventory/file/valid/*.yaml "$fx"/inventory/file/valid/*.json \
	"$fx"/inventory/file/invalid/*.yaml "$fx"/inventory/file/invalid/*.json
add fuzz_inventory_nodeapi "$fx"/inventory/nodeapi/*.json
add fuzz_inventory_proxmox "$fx"/inventory/proxmox/*.json
add fuzz_text_escape "$fx"/requests/invalid/*.error
add fuzz_admission "$fx"/admission/*.json

# fuzz_signature reads "secret\nid\ntimestamp\nsignature\nbody": the
# Standard Webhooks test vector, valid, then with a rotated pair.
mkdir -p "$dest/fuzz_signature"
printf '%s\n%s\n%s\n%s\n%s' whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw msg_p5jXN8AQM9LWM0D4loKWxJek \
	1614265330 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=' '{"test": 2432232314}' \
	>"$dest/fuzz_signature/vector"
printf '%s\n%s\n%s\n%s\n%s' whsec_dGVzdA== evt_1 1614265331 \
	'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= v2,abc' '{}' \
	>"$dest/fuzz_signature/rotated"

# fuzz_host_header reads one Host header value: loopback, allowed, foreign.
mkdir -p "$dest/fuzz_host_header"
i=0
for host in localhost:8080 127.0.0.1 '[::1]:8080' console.example.org:443 '[fd00::7]' \
	evil.example 127.0.0.1.evil.example 'localhost:abc' '[::1'; do
	i=$((i + 1))
	printf '%s' "$host" >"$dest/fuzz_host_header/seed-$i"
done

# Regression inputs (crashes found and fixed), replayed every run.
if [[ -d $fx/fuzz ]]; then
	for dir in "$fx"/fuzz/fuzz_*/; do
		[[ -d $dir ]] || continue
		add "$(basename "$dir")" "$dir"*
	done
fi
