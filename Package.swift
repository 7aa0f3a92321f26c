// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "newspush",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "newspush", targets: ["newspush"]),
        .executable(name: "newspush-hub", targets: ["newspush-hub"]),
        .library(name: "NotificationHubs", targets: ["NotificationHubs"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth", from: "2.5.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.7.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // The app side, a package of its own (Foundation only): its folder here, tested below.
        .package(path: "NewsPushAppKit"),
    ],
    targets: [
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .systemLibrary(
            name: "CLibXML2",
            pkgConfig: "libxml-2.0",
            providers: [.apt(["libxml2-dev"])]
        ),
        // The ledger's embedded engine (one owner class in Ledger/SQLite.swift).
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // Byte searches sixteen bytes at a time for the feed pre-pass and the text loops
        // (bytescan.h says why they are C).
        .target(name: "CByteScan"),
        // The Notification Hubs client knows nothing about news: a module of its own so the
        // compiler keeps it that way.
        .target(
            name: "NotificationHubs",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")]
        ),
        // The domain's values (stories, feeds' records, outbox entries, decisions): they depend on
        // nothing, and every other part of newspush speaks in them.
        .target(name: "NewsPushModel"),
        // The feed parser (libxml2, the dialects, dates, text): bytes in, a `ParsedFeed` out. A
        // library of its own that knows nothing of newspush but the model's values.
        .target(
            name: "FeedParsing",
            dependencies: ["NewsPushModel", "CLibXML2", "CByteScan"],
            // The feed parser appends to buffers held by classes on every libxml2 callback; the
            // run-time exclusivity checks on those accesses were 5 % of a release parse. Debug
            // builds (the tests) keep the checks, so a violation would still be caught there.
            swiftSettings: [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]
        ),
        // The classifier (the encoders, the text model, section evidence, training): an item in,
        // a category and a confidence out. A library of its own, as the parser is.
        .target(
            name: "NewsClassifier",
            dependencies: ["NewsPushModel"],
            exclude: ["Resources/MODELS-NOTICE.md"],
            resources: [
                .copy("Resources/text-model.bin"),
                // all-MiniLM-L6-v2 distilled (tools/classifier; licence and attribution beside it)
                .copy("Resources/token-table.bin"),
                .copy("Resources/encoder-head.bin"),
                // all-MiniLM-L6-v2 itself, eight-bit (tools/classifier/export_encoder.py)
                .copy("Resources/encoder.bin"),
                .copy("Resources/transformer-head.bin"),
            ]
        ),
        // The stages of a run (config, fetch, read, identify, dedupe, plan, send, report): values
        // in, values out. They never see the ledger: the compiler keeps it that way.
        .target(
            name: "NewsPushCore",
            dependencies: [
                "NewsPushModel", "FeedParsing", "NewsClassifier", "CCurl", "CByteScan", "NotificationHubs",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        // The ledger: stores the model's values behind the `LedgerDatabase` seam, in SQLite (one
        // host) or PostgreSQL (a ledger shared by several hosts).
        .target(
            name: "NewsPushLedger",
            dependencies: [
                "NewsPushModel", "CSQLite",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // One session per command (lock, ledger, the stages in order, record): what every front
        // end calls, the command line and the desk alike.
        .target(
            name: "NewsPushSessions",
            dependencies: [
                "NewsPushModel", "NewsPushCore", "FeedParsing", "NewsClassifier", "NewsPushLedger", "NotificationHubs",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // What both front ends (the desk and the app back-end) do alike, owned by neither: the
        // listen address, the client's address behind proxies, blocking threads, users files,
        // security headers, JSON answers and the guard's shell.
        .target(
            name: "NewsPushHTTP",
            dependencies: [
                "NewsPushModel",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The editors' desk: web pages and a JSON API over the same sessions as the command line.
        .target(
            name: "NewsPushDesk",
            dependencies: [
                "NewsPushSessions", "NewsPushCore", "FeedParsing", "NewsClassifier", "NewsPushModel",
                "NewsPushLedger", "NotificationHubs", "NewsPushHTTP",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The app back-end for phones (SPEC §9): registrations, identity, tag rules, over the same
        // sessions and ledger as the desk, with nothing in memory another instance needs.
        .target(
            name: "NewsPushAPI",
            dependencies: [
                "NewsPushSessions", "NewsPushCore", "NewsPushModel", "NewsPushHTTP", "NotificationHubs",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
            ],
            resources: [.copy("openapi.json")]
        ),
        // The watcher's listener (SPEC §10): WebSub callbacks, publish pings, /metrics.
        .target(
            name: "NewsPushWatch",
            dependencies: [
                "NewsPushSessions", "NewsPushCore", "NewsPushHTTP",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "newspush",
            dependencies: [
                "NewsPushSessions", "NewsPushDesk", "NewsPushAPI", "NewsPushWatch", "NewsPushHTTP", "NewsPushCore",
                "FeedParsing", "NewsClassifier", "NewsPushModel",
                "NewsPushLedger", "NotificationHubs",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        // The local Notification Hubs emulator: SAS verification, routing, templates, faults.
        .target(
            name: "HubEmulator",
            dependencies: [
                "NotificationHubs",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .executableTarget(
            name: "newspush-hub",
            dependencies: [
                "HubEmulator", "NotificationHubs",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Benchmarks (README): timings, never tests.
        .executableTarget(
            name: "newspush-bench",
            dependencies: [
                "NewsPushCore", "FeedParsing", "NewsClassifier", "NewsPushModel", "NewsPushLedger", "NewsPushSessions",
                "NotificationHubs", "NewsPushTesting", "NewsPushHTTP", "CLibXML2",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // libFuzzer targets, one per input read from outside (README "Hostile input",
        // scripts/fuzz.sh); the tests replay their seeds and every crashing input found.
        .target(
            name: "NewsPushFuzzing",
            dependencies: ["NewsPushCore", "FeedParsing", "NewsPushHTTP", "NewsPushModel", "NotificationHubs"]
        ),
        .executableTarget(
            name: "newspush-fuzz",
            dependencies: ["NewsPushFuzzing"]
        ),
        // What the parser makes of every feed under the paths given: the test command compares
        // its debug and release builds' outputs (the release tricks must change nothing).
        .executableTarget(
            name: "newspush-parse-digest",
            dependencies: ["FeedParsing"]
        ),
        // Real HTTP servers on 127.0.0.1 for the tests (feed servers, a recording hub).
        .target(
            name: "NewsPushTesting",
            dependencies: [
                "HubEmulator", "NotificationHubs",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "NewsPushCoreTests",
            dependencies: [
                "NewsPushCore", "FeedParsing", "NewsClassifier", "NewsPushModel", "NewsPushLedger",
                "NewsPushSessions", "NotificationHubs",
                "NewsPushTesting",
                "HubEmulator", "NewsPushFuzzing",
            ],
            resources: [.copy("Fixtures")]
        ),
        // The desk's guard, forms and answers in process (Hummingbird's testing framework):
        // they run everywhere, with or without a browser.
        .testTarget(
            name: "NewsPushDeskTests",
            dependencies: [
                "NewsPushDesk", "NewsPushHTTP", "NewsPushSessions", "NewsPushCore", "NewsPushTesting",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The app back-end's routes in process (Hummingbird's testing framework), beside the
        // built binary's exchanges in newspushTests.
        .testTarget(
            name: "NewsPushAPITests",
            dependencies: [
                "NewsPushAPI", "NewsPushHTTP", "NewsPushSessions", "NewsPushCore", "NewsPushTesting", "HubEmulator",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The watcher's listener in process (Hummingbird's testing framework): every route, its
        // guard and the hostile requests, without a WebSub hub (newspushTests runs a real one).
        .testTarget(
            name: "NewsPushWatchTests",
            dependencies: [
                "NewsPushWatch", "NewsPushHTTP", "NewsPushSessions", "NewsPushCore", "NewsPushLedger", "NewsPushModel",
                "NewsPushTesting",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "newspushTests",
            dependencies: [
                "newspush", "newspush-hub", "NewsPushTesting", "NotificationHubs", "NewsPushCore", "FeedParsing",
                "NewsClassifier", "NewsPushModel",
                "NewsPushLedger", "NewsPushAPI", "NewsPushHTTP",
                .product(name: "NewsPushAppKit", package: "NewsPushAppKit"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
    ]
)

// Warnings in newspush's own code are errors (the README's test command builds with them): a
// warning left for later is what a newcomer's first build shows them. Dependencies keep theirs.
for target in package.targets where [.regular, .executable].contains(target.type) {
    target.swiftSettings = (target.swiftSettings ?? []) + [.treatAllWarnings(as: .error)]
}
