#!/usr/bin/env bash
# Runs every benchmark of two release builds side by side, alternating them, so both see the
# same machine (docs/benchmarks.md):
#   scripts/bench-compare.sh OLD_CHECKOUT NEW_CHECKOUT [ROUNDS]
# Each checkout must have `swift build -c release` done. Prints each benchmark's output per
# build and round; compare the lines by eye or with grep.
set -uo pipefail
old=$(cd "$1" && pwd)
new=$(cd "$2" && pwd)
rounds=${3:-2}
shared=$(cd "$(dirname "$0")/../../shared" && pwd)
run() {
    local name=$1
    shift
    for round in $(seq "$rounds"); do
        for build in "$old" "$new"; do
            echo "== $name, round $round, $(basename "$build") ($(git -C "$build" rev-parse --short HEAD))"
            (cd "$build" && .build/release/newspush-bench "$@" 2>&1 | grep -vE '^\s*$')
        done
    done
}
run plan plan --items 30000 --reference-items 3000
run hub hub --pushes 1000 --concurrency 8 --repeats 3
run ledger ledger --feeds 1000 --stories 150 --repeats 3
run fetch fetch --feeds 1000 --delay 0.1 --concurrency 100 --repeats 3
run parse parse "$shared/corpus/realworld" --passes 20 --huge-node-mb 0
run classify classify "$shared/classify/train.jsonl" --passes 3
