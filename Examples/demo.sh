#!/usr/bin/env bash
# The demo in one command, offline: installs what is missing, builds, starts the hub emulator on
# a free port with the virtual devices of Examples/devices.yaml, previews the sample newsroom,
# runs it, shows what each virtual device received, and stops the emulator on exit (Ctrl-C too).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build -c release
bin=.build/release

# A fake connection string (hub-api.md's test vectors): nothing leaves the machine.
export NEWSPUSH_HUB_CONNECTION_STRING='Endpoint=sb://contoso-news.servicebus.windows.net/;SharedAccessKeyName=DefaultFullSharedAccessSignature;SharedAccessKey=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8='
work=$(mktemp -d)
hub=""
cleanup() {
    if [ -n "$hub" ]; then kill "$hub" 2>/dev/null || true; wait "$hub" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$bin/newspush-hub" --port 0 --devices Examples/devices.yaml --log "$work/deliveries.jsonl" > "$work/hub.out" &
hub=$!
for _ in $(seq 100); do grep -q "listening" "$work/hub.out" 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's|.*http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$work/hub.out")
[ -n "$port" ] || { echo "demo: the hub emulator did not start" >&2; exit 1; }
export NEWSPUSH_HUB_ENDPOINT="http://127.0.0.1:$port/"
echo "== hub emulator on $NEWSPUSH_HUB_ENDPOINT"

# The sample newsroom, with its ledger in a scratch folder (every demo starts fresh).
cp -R Examples/feeds Examples/feeds.yaml "$work/"
echo "== newspush preview (what the run would push)"
"$bin/newspush" preview --config "$work/feeds.yaml"
echo
echo "== newspush run"
"$bin/newspush" run --config "$work/feeds.yaml" --report full
echo
echo "== what each virtual device received"
"$bin/newspush-hub" deliveries "$work/deliveries.jsonl"
