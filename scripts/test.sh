#!/usr/bin/env bash
# The test suite as CI runs it, in phases: each phase is a process of its own, so that one that
# fails (or whose test process crashes) is reported with its name and the tests it left
# unfinished, and the phases after it still run and report. The command exits non-zero when any
# phase failed, and ends with each phase's outcome and time.
set -uo pipefail
cd "$(dirname "$0")/.."

logs=${NEWSPUSH_TEST_PHASE_LOGS:-$(mktemp -d -t newspush-test-phases.XXXXXX)}
mkdir -p "$logs"
failed=()
summary=()
# The longest any phase may take (the slowest, main, takes about 5 minutes on two cores).
phase_limit=${NEWSPUSH_TEST_PHASE_LIMIT:-1500}

# The tests a phase's log shows started and never ended (Swift Testing's `◇ Test NAME started.`
# without a `Test NAME passed|failed|skipped`): what a crash took down with it.
unfinished() {
    awk '
        /◇ Test [^ ]/ && / started\.$/ && !/◇ Test case / {
            name = $0; sub(/.*◇ Test /, "", name); sub(/ started\.$/, "", name); open[name] = 1
        }
        /Test .* (passed|failed|skipped)/ {
            for (name in open) if (index($0, "Test " name " ") > 0) delete open[name]
        }
        END { for (name in open) print "    " name }
    ' "$1"
}

# phase NAME COMMAND...: runs COMMAND, its output shown and kept in $logs/NAME.log.
phase() {
    local name=$1
    shift
    local started=$SECONDS
    printf '\n=== phase %s: %s\n' "$name" "$*"
    if [ "$(type -t "$1")" = function ]; then
        "$@" 2>&1 | tee "$logs/$name.log"
    else
        # A phase that hangs ends at its limit with the tests it left unfinished named below,
        # instead of taking the whole of CI's time (timeout signals the phase's process group).
        timeout --kill-after=30 "$phase_limit" "$@" 2>&1 | tee "$logs/$name.log"
    fi
    local status=${PIPESTATUS[0]}
    local took=$((SECONDS - started))
    if [ "$status" -eq 124 ]; then
        printf '=== phase %s did not end within %s s\n' "$name" "$phase_limit"
    fi
    if [ "$status" -eq 0 ]; then
        summary+=("passed  $name ($took s)")
        return 0
    fi
    failed+=("$name")
    summary+=("FAILED  $name ($took s, exit $status)")
    local left
    left=$(unfinished "$logs/$name.log")
    if [ -n "$left" ]; then
        printf '=== phase %s ended (exit %s) while these tests ran:\n%s\n' "$name" "$status" "$left"
        summary+=("        unfinished in $name:" "$left")
    fi
    return 1
}

finish() {
    printf '\n=== summary (logs in %s)\n' "$logs"
    printf '%s\n' "${summary[@]}"
    if [ ${#failed[@]} -gt 0 ]; then
        printf '=== %d phase(s) failed: %s\n' "${#failed[@]}" "${failed[*]}"
        exit 1
    fi
    printf '=== every phase passed\n'
}

# The code's shape first (.swift-format): formatting, line length, a /// summary on every public
# declaration, no force unwrap or force try outside the tests.
phase lint swift format lint --strict --recursive Sources Tests Package.swift NewsPushAppKit
# Nothing runs without a build: its failure ends the command here.
if ! phase build swift build --build-tests; then finish; fi

# The suites that need the machine to themselves run in phases of their own, after the first:
# - AppKitTests drives Foundation's URLSession, which can trap inside Foundation (a crash there
#   would otherwise end the first phase's 400 tests with it);
# - the PostgreSQL suites (servers of their own, a minute of two hosts under kills, ledgers
#   opened in the test process) and the back-end's attack tests (floods of connections);
# - the watcher's suites time a real WebSub hub and feed servers against their own seconds;
# - the generated clients build a package of their own (minutes of both cores);
# - the run's memory test (2,000 feeds at 64 transfers, and a peak to measure) and a day of
#   watching 1,000 feeds on a fast clock, each alone.
appkit_suites="AppKitTests"
watch_suites="WatchTests|WatchListenerTests|WatchSharingTests"
postgres_suites="PostgresLedgerTests|TwoHostsChaosTests|NewsPushCoreTests.LedgerTests|NewsPushCoreTests.LedgerConnectionsTests|ApiAbuseTests|WatchLeaseTests"
alone="RunMemoryTests|GeneratedClientTests|WatchDayTests"
phase main swift test --skip-build --skip "$appkit_suites|$postgres_suites|$watch_suites|$alone" "$@"
# The app kit's package alone, as an app builds it (Foundation only, warnings are errors), then
# its tests against the built back-end.
appkit() {
    swift build --package-path NewsPushAppKit -Xswiftc -warnings-as-errors || return 1
    timeout --kill-after=30 "$phase_limit" swift test --skip-build --filter "$appkit_suites" "$@"
}
phase appkit appkit "$@"
phase postgres swift test --skip-build --filter "$postgres_suites" "$@"
phase watch swift test --skip-build --filter "$watch_suites" "$@"
phase generated-clients swift test --skip-build --filter GeneratedClientTests "$@"
phase run-memory swift test --skip-build --filter RunMemoryTests "$@"
phase watch-day swift test --skip-build --filter WatchDayTests "$@"
# The desk in a real browser (Chromium through WebDriver), against the debug build just tested.
phase browser /usr/bin/python3 -m unittest discover -s Tests/desk -v
# The feed parser in the release configuration its speed tricks rely on (optimised Swift,
# exclusivity checks off, the C byte searches at -O): its release and debug builds must read
# every feed of the corpora, the fixtures and the fuzzers' seeds exactly alike (a trick that only
# holds in one of them shows as a difference, feed by feed).
parser_release() {
    swift build -c release --product newspush-parse-digest || return 1
    local feeds=(Tests/NewsPushCoreTests/Fixtures/feeds Tests/NewsPushCoreTests/Fixtures/fuzz)
    [ -d ../shared/corpus ] && feeds+=(../shared/corpus)
    .build/debug/newspush-parse-digest "${feeds[@]}" >"$logs/parse-debug.txt" || return 1
    .build/release/newspush-parse-digest "${feeds[@]}" >"$logs/parse-release.txt" || return 1
    local count
    count=$(wc -l <"$logs/parse-debug.txt")
    if ! cmp -s "$logs/parse-debug.txt" "$logs/parse-release.txt"; then
        echo "the release parser reads these feeds differently from the debug one:"
        diff "$logs/parse-debug.txt" "$logs/parse-release.txt" | cut -c1-300 | head -40
        return 1
    fi
    echo "$count feeds read alike by the debug and the release parser"
}
phase parser-release parser_release
finish
