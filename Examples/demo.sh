#!/usr/bin/env bash
# The demo in one command, offline: installs what is missing, builds, starts the hub emulator on
# a free port with the virtual devices of Examples/devices.yaml, starts the app back-end
# (`newspush api`) and registers phones through it (anonymous ones, one signed in), previews
# the sample newsroom, runs it, shows what each device received and what each alert did (the
# emulator's phones report receipt and opens to `newspush api`), and stops both servers on exit
# (Ctrl-C too).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build -c release
bin=.build/release

# A fake connection string (hub-api.md's test vectors): nothing leaves the machine.
export NEWSPUSH_HUB_CONNECTION_STRING='Endpoint=sb://contoso-news.servicebus.windows.net/;SharedAccessKeyName=DefaultFullSharedAccessSignature;SharedAccessKey=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8='
work=$(mktemp -d)
hub=""
api=""
cleanup() {
    if [ -n "$api" ]; then kill "$api" 2>/dev/null || true; wait "$api" 2>/dev/null || true; fi
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

# The app back-end: phones register through it, so only newspush decides their tags.
echo "reader-password" | "$bin/newspush" api add-user alice --role reader --config "$work/feeds.yaml" >/dev/null
"$bin/newspush" api --listen 127.0.0.1:0 --config "$work/feeds.yaml" > "$work/api.out" 2> "$work/api.err" &
api=$!
for _ in $(seq 100); do grep -q "listening" "$work/api.out" 2>/dev/null && break; sleep 0.1; done
api_url=$(sed -n 's|.*listening on \(http://127.0.0.1:[0-9]*\)/.*|\1|p' "$work/api.out")
[ -n "$api_url" ] || { echo "demo: newspush api did not start" >&2; cat "$work/api.err" >&2; exit 1; }
echo "== newspush api on $api_url/"
# The emulator's phones report what they did with each alert to the back-end (SPEC §11).
curl -sS -X PUT "${NEWSPUSH_HUB_ENDPOINT}_emulator/report-to" -d "$api_url" -o /dev/null
echo "-- an anonymous phone (iOS) asks for World, Technology and someone else's tag:"
curl -sS -X PUT "$api_url/api/installations/demo-iphone" -H 'Content-Type: application/json' \
    -d '{"platform":"apns","pushChannel":"9F2A0B1C9F2A0B1C9F2A0B1C9F2A0B1C9F2A0B1C9F2A0B1C9F2A0B1C9F2A0B1C","topics":["World","Technology","username:bob"]}'
echo
echo "-- six more anonymous phones (World and Technology readers):"
for n in 1 2 3 4 5 6; do
    curl -sS -X PUT "$api_url/api/installations/demo-phone-$n" -H 'Content-Type: application/json' \
        -d "{\"platform\":\"apns\",\"pushChannel\":\"$(printf '%064x' "$n")\",\"topics\":[\"World\",\"Technology\"]}" \
        -o /dev/null -w "demo-phone-$n: %{http_code}\n"
done
echo "-- alice signs in on her Android phone (the tutorials' flow: POST for an id, then PUT):"
# The body exactly as the app reads it (the trailing x keeps any newline the answer ends with),
# then what the tutorials' apps do with it: drop one character at each end, nothing more.
body=$(curl -sS -u alice:reader-password -X POST "$api_url/api/register?handle=dG9rZW4tb2YtYS1waG9uZQ:APA91bHq3xZ9kLmHq3xZ9kLmHq3xZ9kLmHq3xZ9kLmHq3xZ9kLmHq3xZ9kLmHq3xZ9kLmHq3xZ9kLm"; printf x)
body=${body%x}
id=${body:1:${#body}-2}
status=$(curl -sS -u alice:reader-password -X PUT "$api_url/api/register/$id" -H 'Content-Type: application/json' \
    -d '{"Platform":"gcm","Handle":"dG9rZW4tb2YtYS1waG9uZQ:APA91bHq3xZ9kLmHq3xZ9kLmHq3xZ9kLmHq3xZ9kLmHq3xZ9kLmHq3xZ9kLmHq3xZ9kLmHq3xZ9kLm","Tags":["World"]}' -o /dev/null -w "%{http_code}")
echo "PUT /api/register/$id: $status"
[ "$status" = 200 ] || { echo "demo: the tutorials' registration failed ($status)" >&2; exit 1; }
"$bin/newspush" devices list --config "$work/feeds.yaml"
echo
echo "== newspush preview (what the run would push)"
"$bin/newspush" preview --config "$work/feeds.yaml"
echo
echo "== newspush run"
"$bin/newspush" run --config "$work/feeds.yaml" --report full
echo
echo "== what each device received (the two phones of newspush api are <id>/newspush)"
"$bin/newspush-hub" deliveries "$work/deliveries.jsonl"
echo
echo "== newspush report (what each alert did: the apps' receipts and opens)"
sleep 1
"$bin/newspush" report --config "$work/feeds.yaml"
