#!/usr/bin/env bash
# Records what every command prints and returns on the demo newsroom, on a hub answering 401,
# 503 and 400, and on a held lock: one file per command (exit status, stdout, stderr), with
# times, ids, ports and the scratch folder replaced by placeholders so two builds compare by
# bytes. Used to show that a change of structure changed no behaviour:
#
#   scripts/behaviour-snapshot.sh OLD_BIN_DIR /tmp/before
#   scripts/behaviour-snapshot.sh .build/debug /tmp/after
#   diff -r /tmp/before /tmp/after
set -uo pipefail
bin=$(cd "$1" && pwd)
out=$2
cd "$(dirname "$0")/.."
repo=$(pwd)
rm -rf "$out"
mkdir -p "$out"
export NEWSPUSH_HUB_CONNECTION_STRING='Endpoint=sb://contoso-news.servicebus.windows.net/;SharedAccessKeyName=DefaultFullSharedAccessSignature;SharedAccessKey=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8='
export NO_COLOR=1
work=$(mktemp -d)
hub=""
cleanup() {
    [ -n "$hub" ] && kill "$hub" 2>/dev/null && wait "$hub" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

"$bin/newspush-hub" --port 0 --devices Examples/devices.yaml --log "$work/deliveries.jsonl" > "$work/hub.out" &
hub=$!
for _ in $(seq 100); do grep -q listening "$work/hub.out" 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's|.*http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$work/hub.out")
export NEWSPUSH_HUB_ENDPOINT="http://127.0.0.1:$port/"
control="http://127.0.0.1:$port/_emulator/faults"

normalise() {
    sed -E -e "s|$work|WORK|g" -e "s|127\.0\.0\.1:$port|127.0.0.1:PORT|g" \
        -e 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z/TIME/g' \
        -e 's/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/UUID/g' \
        -e 's/(se=|se%3[dD])[0-9]+/\1SE/g' -e 's/sig=[^&" ]+/sig=SIG/g' \
        -e 's/(notification id |"notification_id" ?: ?"|cancel |scheduled notification id )[A-Za-z0-9_-]{6,}/\1NID/g' \
        -e 's/tracking_id=[^ ]+/tracking_id=TID/g' -e "s/TimeStamp:[^ ]+ [0-9:]+ [AP]M/TimeStamp:STAMP/g" -e 's/pid [0-9]+/pid PID/g' \
        -e 's/[0-9]+\.[0-9] h old/N h old/g' -e 's/(\.tmp-)[0-9]+/\1PID/g'
}

# record NAME [ENV=VALUE...] -- ARGS...: runs newspush in the newsroom folder and keeps the result.
record() {
    local name=$1
    shift
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    (cd "$newsroom" && env "${envs[@]}" "$bin/newspush" "$@" > "$work/stdout" 2> "$work/stderr" < /dev/null)
    local status=$?
    {
        echo "\$ newspush $*"
        echo "exit: $status"
        echo "--- stdout"
        normalise < "$work/stdout"
        echo "--- stderr"
        normalise < "$work/stderr"
    } > "$out/$name.txt"
}

fresh_newsroom() {
    newsroom="$work/$1"
    rm -rf "$newsroom"
    mkdir -p "$newsroom"
    cp -R Examples/feeds Examples/feeds.yaml "$newsroom/"
}

fault() {
    curl -s -o /dev/null -X DELETE "$control"
    [ -n "$1" ] && curl -s -o /dev/null -X POST -H 'Content-Type: application/json' -d "$1" "$control"
}

# The demo newsroom, every command.
fresh_newsroom demo
record 01-check-text -- check
record 02-check-json -- check --format json
record 03-preview-text -- preview
record 04-preview-json -- preview --format json
record 05-preview-requests -- preview --show-requests
record 06-preview-verbose -- preview -v
record 07-state-show-missing -- state show
record 08-run-json -- run --format json --metrics-file metrics.prom
sed -E 's/[0-9]+\.[0-9]+(e[-+]?[0-9]+)?$/NUM/' "$newsroom/metrics.prom" | grep -v "^#" | sort > "$out/08-metrics.txt"
record 09-run-again-text -- run
record 10-run-full -- run --report full
record 11-run-quiet -- run -q
record 12-state-show -- state show
record 13-state-show-json -- state show --format json
record 14-state-export -- state export
record 15-state-check -- state check
record 16-state-check-json -- state check --format json
record 17-parse -- parse feeds/world.xml
record 18-parse-jsonl -- parse feeds/world.xml feeds/technology.atom --format jsonl
record 19-classify -- classify "Central bank raises interest rates again as inflation bites"
record 20-publish -- publish --category World --title "Snapshot headline one" --url https://news.example.org/snap-1 --yes
record 21-publish-repeat -- publish --category World --title "Snapshot headline one" --url https://news.example.org/snap-1 --yes
record 22-publish-repeat-json -- publish --category World --title "Snapshot headline one" --url https://news.example.org/snap-1 --yes --format json
record 23-publish-dry -- publish --category Sports --title "Snapshot dry run" --dry-run
record 24-publish-dry-json -- publish --category Sports --title "Snapshot dry run" --dry-run --format json
record 25-publish-force -- publish --category World --title "Snapshot headline one" --url https://news.example.org/snap-1 --yes --force
record 26-publish-json -- publish --category Politics --title "Snapshot json" --yes --format json
record 27-hub-token -- hub token --expiry 1700000000
record 28-hub-test-send -- hub test-send --category World --title "Snapshot test"
record 29-hub-test-send-json -- hub test-send --category World --title "Snapshot test" --format json
record 30-hub-status-last -- hub status --last 2
record 31-hub-status-json -- hub status --last 1 --format json
record 32-hub-cancel-unknown -- hub cancel no-such-id
record 33-publish-trial -- publish --category Technology --title "Snapshot trial" --tags user:alice --yes
record 34-state-forget -- state forget no-such-key
record 35-state-prune -- state prune
record 36-state-migrate -- state migrate
record 37-publish-replace -- publish --replace link:news.example.org/snap-1 --title "Snapshot headline corrected" --yes
record 38-classify-input -- classify --input feeds/world.xml
record 39-run-feed-unknown -- run --feed "No Such Feed"
record 40-publish-at -- publish --category World --title "Snapshot scheduled" --at +2h --yes
record 41-check-fetch -- check --fetch

# A hub that answers 401, 503 and 400 to every send.
for status in 401 503 400; do
    fresh_newsroom "hub-$status"
    fault "{\"status\": $status, \"count\": 1000, \"retry_after\": \"0\"}"
    record "50-hub-$status-run-json" -- run --format json
    record "51-hub-$status-run-text" -- run
    record "52-hub-$status-publish" -- publish --category Sports --title "Hub $status headline" --yes
    record "53-hub-$status-publish-json" -- publish --category Sports --title "Hub $status json" --yes --format json
    record "54-hub-$status-state-show" -- state show
    record "55-hub-$status-test-send" -- hub test-send --category World --title "Hub $status test"
    record "56-hub-$status-status" -- hub status some-id
    fault ""
done

# A held lock.
fresh_newsroom locked
record 60-locked-first-run -- run
flock "$newsroom/newspush-state.db.lock" sleep 60 &
holder=$!
sleep 0.3
record 61-locked-run -- run
record 62-locked-run-json -- run --format json
record 63-locked-publish -- publish --category World --title "Locked headline" --yes
record 64-locked-publish-json -- publish --category World --title "Locked headline" --yes --format json
record 65-locked-prune -- state prune
record 66-locked-forget -- state forget x
record 67-locked-migrate -- state migrate
record 68-locked-hub-cancel -- hub cancel no-such-id
record 69-locked-preview -- preview
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null

# Config and usage errors.
fresh_newsroom errors
record 70-config-missing -- run --config nope.yaml
printf 'hub: {name: x, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}"}\nfeeds: []\n' > "$newsroom/empty.yaml"
record 71-no-feeds-run -- run --config empty.yaml
record 72-no-feeds-check -- check --config empty.yaml
record 73-bad-connection-token NEWSPUSH_HUB_CONNECTION_STRING=Endpoint=sb://x/ -- hub token
record 74-bad-connection-run NEWSPUSH_HUB_CONNECTION_STRING=Endpoint=sb://x/ -- run
record 75-usage -- run --send-initial -1
record 76-usage-json -- publish --category World --format json
echo "$out: $(ls "$out" | wc -l) records"
