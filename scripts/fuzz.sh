#!/usr/bin/env bash
# Fuzzes one input of newspush with libFuzzer (README "Hostile input").
#
#   scripts/fuzz.sh TARGET [SECONDS] [libFuzzer options…]
#
# TARGET is feed, config, tags, dates, connection or form; SECONDS defaults to 600. Builds
# newspush-fuzz with -sanitize=fuzzer,address into .build/fuzz, seeds it from the test
# fixtures (and ../shared/corpus/feedparser for feeds, when present), keeps what it learns in
# .build/fuzz-corpus/TARGET and writes crashing inputs to .build/fuzz-artifacts/TARGET/. A
# finding is a crash, a sanitizer report or more than one second on one input; copy its input
# into Tests/NewsPushCoreTests/Fixtures/fuzz/TARGET/crashers/ so the tests replay it.
set -euo pipefail
cd "$(dirname "$0")/.."

target=${1:?usage: scripts/fuzz.sh feed|config|tags|dates|connection|form [SECONDS] [libFuzzer options…]}
seconds=${2:-600}
shift; [ $# -gt 0 ] && shift

swift build -c debug --scratch-path .build/fuzz --product newspush-fuzz \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING >&2

fixtures=Tests/NewsPushCoreTests/Fixtures
corpus=.build/fuzz-corpus/$target
artifacts=.build/fuzz-artifacts/$target
mkdir -p "$corpus" "$artifacts"
dirs=("$corpus" "$fixtures/fuzz/$target")
if [ "$target" = feed ]; then
    dirs+=("$fixtures/feeds" "$fixtures/feeds/broken")
    [ -d ../shared/corpus/feedparser ] && dirs+=(../shared/corpus/feedparser)
fi

exec .build/fuzz/debug/newspush-fuzz "$target" -max_total_time="$seconds" -timeout=1 -rss_limit_mb=2048 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 "$@" "${dirs[@]}"
