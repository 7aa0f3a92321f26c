#!/usr/bin/env bash
# The test suite as CI runs it: every test in the debug configuration (run-time exclusivity
# checks on), then the core library's tests again in the release configuration that the feed
# parser's speed tricks rely on (optimised Swift, exclusivity checks off, the C byte searches
# at -O): a trick that only holds in one of them fails here.
set -euo pipefail
cd "$(dirname "$0")/.."
# The code's shape first (.swift-format): formatting, line length, a /// summary on every public
# declaration, no force unwrap or force try outside the tests.
swift format lint --strict --recursive Sources Tests Package.swift
# The PostgreSQL suites (servers of their own, a minute of two hosts under kills, ledgers opened
# in the test process, whose waits on the server hold the test process's threads) run after the
# rest, so they neither starve the timed tests nor are starved by them; so do the back-end's
# attack tests (floods of connections): Foundation's Process.run reads /proc/self/fd past its
# buffer once the test process holds about 1,300 descriptors (swift-corelibs-foundation #5472),
# and the first phase alone comes near that. The run's memory test (2,000 feeds at 64 transfers
# at once, and a peak to measure) runs last and alone: beside the whole first phase on a loaded
# CI machine its first run failed a feed, and beside the attack tests it took the registrations'
# rate that they measure.
watch_suites="WatchTests|WatchListenerTests"
postgres_suites="PostgresLedgerTests|TwoHostsChaosTests|NewsPushCoreTests.LedgerTests|ApiAbuseTests|WatchLeaseTests"
swift test --skip "$postgres_suites|RunMemoryTests|GeneratedClientTests|WatchDayTests|$watch_suites" "$@"
swift test --skip-build --filter "$postgres_suites" "$@"
# The watcher's suites time a real WebSub hub and feed servers in this process against their
# own seconds: beside the first phase's 400 tests on two cores, a publish's fetch starved.
swift test --skip-build --filter "$watch_suites" "$@"
# The generated clients: the Swift one builds a package of its own (swift-openapi-generator and
# its dependencies, minutes of both cores), so it runs when nothing timed runs beside it.
swift test --skip-build --filter GeneratedClientTests "$@"
swift test --skip-build --filter RunMemoryTests "$@"
# A day of watching 1,000 feeds on a fast clock (three minutes of both cores), alone as well.
swift test --skip-build --filter WatchDayTests "$@"
# The desk in a real browser (Chromium through WebDriver), against the debug build just tested.
/usr/bin/python3 -m unittest discover -s Tests/desk -v
swift test -c release -Xswiftc -enable-testing --filter NewsPushCoreTests
