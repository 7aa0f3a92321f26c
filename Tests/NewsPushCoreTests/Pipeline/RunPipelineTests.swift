import Crypto
import Foundation
import Logging
import NewsPushModel
import NewsPushTesting
import NotificationHubs
import Testing

@testable import NewsPushCore
@testable import NewsPushLedger
@testable import NewsPushSessions

/// End to end in process: feeds served by a real HTTP server on 127.0.0.1, pushes received by
/// a second one standing in for the hub.
@Suite("Run pipeline end to end")
struct RunPipelineTests {
    struct Setup {
        let folder: TemporaryFolder
        let feeds: LocalHTTPServer
        let hub: LocalHTTPServer
        let configPath: String

        func pipeline() throws -> RunSession {
            let config = try ConfigLoader(environment: ["NEWSPUSH_HUB_CONNECTION_STRING": testConnectionString]).load(
                path: configPath)
            var logger = Logger(label: "test")
            logger.logLevel = .critical
            var context = SessionContext(config: config, logger: logger)
            context.retrySleep = { _ in }
            return RunSession(context: context)
        }

        func run(_ options: RunRequest) async throws -> RunResult {
            let pipeline = try pipeline()
            return try await offThePool { Result { try pipeline.run(options) } }.get()
        }

        /// The ledger the runs write (opened read-only).
        func ledger() throws -> Ledger {
            try Ledger.open(configured: folder.file("state/newspush-state.db"), access: .read)
        }

        func stop() {
            feeds.stop()
            hub.stop()
            folder.cleanup()
        }
    }

    static func setUp(
        firstRun: String = "send",
        hubAnswer: @escaping @Sendable (RecordedRequest) async -> CannedResponse = { _ in
            CannedResponse(
                status: 201,
                headers: [
                    (
                        "Location",
                        "https://contoso-news.servicebus.windows.net/breaking-news/messages/NH-2026-abc?api-version="
                            + "2020-06"
                    ), ("TrackingId", "t-1"),
                ])
        }, worldItems: [(guid: String, title: String, minutesAgo: Double)]? = nil
    ) async throws -> Setup {
        let world = rssFeed(
            title: "World desk",
            items: worldItems ?? [
                ("w1", "Storm barrier closes for the first time", 10),
                ("w2", "Rail deal \"signed\" &amp; sealed", 30),
            ])
        let tech = rssFeed(title: "Tech desk", items: [("t1", "Compiler 2.0 released", 5)])
        let feeds = try await LocalHTTPServer.serving([
            "/world.xml": CannedResponse(
                headers: [("Content-Type", "application/rss+xml; charset=utf-8")], text: world),
            "/tech.xml": CannedResponse(text: tech),
        ])
        let hub = try await LocalHTTPServer.start(hubAnswer)
        let folder = try TemporaryFolder()
        let config = try folder.write(
            "feeds.yaml",
            """
            hub:
              name: breaking-news
              connection_string: ${NEWSPUSH_HUB_CONNECTION_STRING}
              endpoint: \(hub.baseURL)/
            state: state/newspush-state.db
            policy: {max_age: 3h, budget: {per_category: 3, per: 1h}, first_run: \(firstRun)}
            categories:
              Technology: {tags: "Technology || Science", message: "Tech: {title} ({source})"}
            feeds:
              - {url: "\(feeds.baseURL)/world.xml", category: World}
              - {url: "\(feeds.baseURL)/tech.xml", name: Tech Desk, category: Technology}
            """)
        try FileManager.default.createDirectory(atPath: folder.file("state"), withIntermediateDirectories: true)
        return Setup(folder: folder, feeds: feeds, hub: hub, configPath: config)
    }

    /// Checks a SAS token the way the service does, with an implementation independent of the client's.
    static func verifySAS(_ header: String?, now: Date = Date()) throws {
        let token = try #require(header)
        #expect(token.hasPrefix("SharedAccessSignature "))
        var fields: [String: String] = [:]
        for pair in token.dropFirst("SharedAccessSignature ".count).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            fields[parts[0]] = parts.count > 1 ? parts[1] : ""
        }
        let sr = try #require(fields["sr"])
        let se = try #require(fields["se"].flatMap(Int.init))
        #expect(sr == "https%3a%2f%2fcontoso-news.servicebus.windows.net%2fbreaking-news")
        #expect(fields["skn"] == "DefaultFullSharedAccessSignature")
        #expect(Double(se) > now.timeIntervalSince1970 + 1800, "token should live about an hour")
        #expect(Double(se) < now.timeIntervalSince1970 + 7200)
        let mac = HMAC<SHA256>.authenticationCode(
            for: Data("\(sr)\n\(se)".utf8), using: SymmetricKey(data: Data(testKey.utf8)))
        let expected = Data(mac).base64EncodedString()
        let sig = try #require(fields["sig"]?.removingPercentEncoding)
        #expect(sig == expected, "signature does not verify")
    }

    @Test func firstRunSendsTemplatePushesThatTheHubAccepts() async throws {
        let setup = try await Self.setUp()
        defer { setup.stop() }
        let result = try await setup.run(RunRequest())
        let report = result.report
        #expect(report.summary.feedsOk == 2)
        #expect(report.summary.pushesSent == 3)
        #expect(report.summary.pushesFailed == 0)
        #expect(
            report.pushes.allSatisfy {
                $0.status == .sent && $0.httpStatus == 201 && $0.notificationId == "NH-2026-abc"
            })
        #expect(report.items.allSatisfy { $0.decision == .pushed })

        let requests = await setup.hub.requests()
        #expect(requests.count == 3)
        for request in requests {
            #expect(request.method == "POST")
            #expect(request.uri == "/breaking-news/messages/?api-version=2020-06")
            #expect(request.header("Content-Type") == "application/json;charset=utf-8")
            #expect(request.header("ServiceBusNotification-Format") == "template")
            try Self.verifySAS(request.header("Authorization"))
            let body = try #require(try JSONSerialization.jsonObject(with: request.body) as? [String: String])
            #expect(
                Set(body.keys) == [
                    "messageParam", "title", "category", "url", "source", "id", "image", "expiry", "collapseId",
                    "importance", "priority", "interruptionLevel", "alertId",
                ], "SPEC §5's properties, and §11's alert id")
        }
        let bodies = try requests.map {
            try #require(try JSONSerialization.jsonObject(with: $0.body) as? [String: String])
        }
        let storm = try #require(bodies.first { $0["title"] == "Storm barrier closes for the first time" })
        #expect(storm["messageParam"] == "Breaking World News : Storm barrier closes for the first time")
        #expect(storm["category"] == "World")
        #expect(storm["url"] == "https://news.example.org/w1")
        #expect(storm["source"] == "World desk")
        let rail = try #require(bodies.first { $0["url"] == "https://news.example.org/w2" })
        #expect(rail["messageParam"] == "Breaking World News : Rail deal \"signed\" & sealed")
        let tech = try #require(bodies.first { $0["category"] == "Technology" })
        #expect(tech["messageParam"] == "Tech: Compiler 2.0 released (Tech Desk)")
        let techRequest = requests.first {
            String(decoding: $0.body, as: UTF8.self).contains("\"category\":\"Technology\"")
        }
        #expect(techRequest?.header("ServiceBusNotification-Tags") == "Technology || Science")
        #expect(requests.filter { $0.header("ServiceBusNotification-Tags") == "World" }.count == 2)

        // The ledger records every push; the hub key is nowhere in it.
        let ledgerBytes = try Data(contentsOf: URL(fileURLWithPath: setup.folder.file("state/newspush-state.db")))
        #expect(ledgerBytes.range(of: Data(testKey.utf8)) == nil)
        let stories = try setup.ledger().allStories().map(\.record)
        #expect(stories.filter { $0.status == .pushed }.count == 3)
        #expect(stories.allSatisfy { $0.notificationId == "NH-2026-abc" })
        #expect(try setup.ledger().outbox().isEmpty)
    }

    @Test func secondRunPushesNothingAlreadySent() async throws {
        let setup = try await Self.setUp()
        defer { setup.stop() }
        _ = try await setup.run(RunRequest())
        let second = try await setup.run(RunRequest())
        #expect(second.report.pushes.isEmpty)
        #expect(second.report.items.allSatisfy { $0.decision == .seen })
        #expect(second.report.summary.itemsNew == 0)
        #expect(await setup.hub.requests().count == 3)
    }

    @Test func aFeedThatChangesItsGuidsIsStillRecognisedByLink() async throws {
        let counter = Counter()
        let feeds = try await LocalHTTPServer.start { _ in
            // Same article, new guid on every fetch.
            let n = await counter.next()
            return CannedResponse(
                text: """
                    <rss version="2.0"><channel><title>Fickle</title><item><title>Same article every time</title>
                    <link>https://news.example.org/article?utm_source=rss&amp;n=\(n)</link>
                    <guid isPermaLink="false">guid-\(n)</guid>
                    <pubDate>\(rfc822(minutesAgo: 5))</pubDate></item></channel></rss>
                    """.replacingOccurrences(of: "&amp;n=\(n)", with: ""))
        }
        defer { feeds.stop() }
        let setup = try await Self.setUp()
        defer { setup.stop() }
        let text = try String(contentsOfFile: setup.configPath, encoding: .utf8)
            .replacingOccurrences(
                of: "feeds:\n", with: "feeds:\n  - {url: \"\(feeds.baseURL)/fickle.xml\", category: Business}\n")
        try text.write(toFile: setup.configPath, atomically: true, encoding: .utf8)
        let first = try await setup.run(RunRequest())
        #expect(first.report.items.first { $0.key == "guid:127.0.0.1/guid-1" }?.decision == .pushed)
        let second = try await setup.run(RunRequest())
        let again = try #require(second.report.items.first { $0.key == "guid:127.0.0.1/guid-2" })
        #expect(again.decision == .seen)
        #expect(second.report.pushes.isEmpty)
    }

    @Test func conditionalGetValidatorsAreStoredOnlyByRealRuns() async throws {
        let body = rssFeed(title: "Etag desk", items: [("e1", "Cached story", 3)])
        let feeds = try await LocalHTTPServer.start { request in
            if request.header("If-None-Match") == "\"abc\"" { return CannedResponse(status: 304) }
            return CannedResponse(headers: [("ETag", "\"abc\"")], text: body)
        }
        defer { feeds.stop() }
        let setup = try await Self.setUp()
        defer { setup.stop() }
        let text = try String(contentsOfFile: setup.configPath, encoding: .utf8)
            .replacingOccurrences(
                of: "feeds:\n", with: "feeds:\n  - {url: \"\(feeds.baseURL)/etag.xml\", category: Science}\n")
        try text.write(toFile: setup.configPath, atomically: true, encoding: .utf8)
        let statePath = setup.folder.file("state/newspush-state.db")
        _ = try await setup.run(RunRequest())
        let stored = try #require(
            try setup.ledger().feeds(["\(feeds.baseURL)/etag.xml"])["\(feeds.baseURL)/etag.xml"]?.validators)
        #expect(stored.etag == "\"abc\"")
        let second = try await setup.run(RunRequest())
        let feed = try #require(second.report.feeds.first { $0.url.hasSuffix("etag.xml") })
        #expect(feed.status == .notModified && feed.httpStatus == 304 && feed.error == nil)
        #expect(!second.report.isPartial)
        // A dry run uses the stored validators but writes none.
        try FileManager.default.removeItem(atPath: statePath)
        _ = try await setup.run(RunRequest(dryRun: true))
        #expect(!FileManager.default.fileExists(atPath: statePath))
        #expect(await feeds.requests().last?.header("If-None-Match") == nil)
    }

    @Test func retryAfterPausesTheFeedAndMovesAreReported() async throws {
        let body = rssFeed(title: "Moved desk", items: [("m1", "Moved story", 3)])
        let feeds = try await LocalHTTPServer.start { request in
            switch request.uri {
            case "/busy.xml": return CannedResponse(status: 429, headers: [("Retry-After", "3600")])
            case "/old.xml": return CannedResponse(status: 308, headers: [("Location", "/new.xml")])
            default: return CannedResponse(text: body)
            }
        }
        defer { feeds.stop() }
        let setup = try await Self.setUp()
        defer { setup.stop() }
        let text = try String(contentsOfFile: setup.configPath, encoding: .utf8)
            .replacingOccurrences(
                of: "feeds:\n",
                with:
                    "feeds:\n  - {url: \"\(feeds.baseURL)/busy.xml\", category: Sports}\n  - {url: "
                    + "\"\(feeds.baseURL)/old.xml\", category: Business}\n"
            )
        try text.write(toFile: setup.configPath, atomically: true, encoding: .utf8)
        let first = try await setup.run(RunRequest())
        let moved = try #require(first.report.feeds.first { $0.url.hasSuffix("old.xml") })
        #expect(moved.status == .ok && moved.movedTo == "\(feeds.baseURL)/new.xml")
        #expect(first.report.text().contains("Feeds that moved for good (update feeds.yaml)"))
        #expect(first.report.jsonText().contains("\"moved_to\" : \"\(feeds.baseURL)/new.xml\""))
        let busy = try #require(first.report.feeds.first { $0.url.hasSuffix("busy.xml") })
        #expect(busy.httpStatus == 429 && busy.error?.contains("not to be fetched again before") == true)
        let busyRequests = await feeds.requests().filter { $0.uri == "/busy.xml" }.count
        let second = try await setup.run(RunRequest())
        let skipped = try #require(second.report.feeds.first { $0.url.hasSuffix("busy.xml") })
        #expect(skipped.status == .error && skipped.error?.contains("not fetched") == true)
        #expect(
            await feeds.requests().filter { $0.uri == "/busy.xml" }.count == busyRequests, "the paused feed was fetched"
        )
    }

    @Test func dryRunSendsNothingAndWritesNothing() async throws {
        let setup = try await Self.setUp()
        defer { setup.stop() }
        let result = try await setup.run(RunRequest(dryRun: true, keepRequests: true))
        #expect(result.report.dryRun)
        #expect(result.report.pushes.count == 3)
        #expect(result.report.pushes.allSatisfy { $0.status == .wouldSend })
        #expect(result.report.items.allSatisfy { $0.decision == .wouldPush })
        #expect(result.requests.count == 3)
        try Self.verifySAS(try result.requests.first?.get().header("Authorization"))
        #expect(try result.requests.first?.get().redactedDescription().contains("sig=<redacted>") == true)
        #expect(await setup.hub.requests().isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: setup.folder.file("state")).isEmpty)
    }

    @Test func baselineFirstRunRecordsWithoutSending() async throws {
        let setup = try await Self.setUp(firstRun: "baseline")
        defer { setup.stop() }
        let result = try await setup.run(RunRequest())
        #expect(result.report.pushes.isEmpty)
        #expect(result.report.items.allSatisfy { $0.decision == .baseline })
        #expect(await setup.hub.requests().isEmpty)
        #expect(try setup.ledger().allStories().count == 3)
    }

    @Test func sendInitialPushesOnlyTheNewest() async throws {
        let setup = try await Self.setUp(firstRun: "baseline")
        defer { setup.stop() }
        let result = try await setup.run(RunRequest(sendInitial: 1))
        #expect(result.report.pushes.count == 1)
        #expect(result.report.pushes.first?.properties["title"] == "Compiler 2.0 released")
        #expect(result.report.items.filter { $0.decision == .baseline }.count == 2)
    }

    @Test func aPushRefusedForItselfFailsAndIsNotRetried() async throws {
        let setup = try await Self.setUp(hubAnswer: { request in
            if String(decoding: request.body, as: UTF8.self).contains("/w1") {
                return CannedResponse(status: 400, text: "<Error><Code>400</Code><Detail>Bad payload</Detail></Error>")
            }
            return CannedResponse(status: 201)
        })
        defer { setup.stop() }
        let first = try await setup.run(RunRequest())
        #expect(first.report.summary.pushesFailed == 1)
        #expect(first.report.summary.pushesSent == 2, "a refusal of one push does not stop the others")
        #expect(first.report.outcome == .partial)
        #expect(first.report.items.first { $0.key.hasSuffix("w1") }?.decision == .failed)
        #expect(first.report.pushes.first { $0.itemKey.hasSuffix("w1") }?.error?.contains("Bad payload") == true)
        #expect(await setup.hub.requests().count == 3, "400 is not retried")
        let second = try await setup.run(RunRequest())
        #expect(second.report.pushes.isEmpty)
        #expect(await setup.hub.requests().count == 3)
    }

    @Test func aWrongKeyStopsSendingAndKeepsEveryPushForTheNextRun() async throws {
        let fixed = Flag()
        let setup = try await Self.setUp(hubAnswer: { _ in
            if await fixed.isSet { return CannedResponse(status: 201) }
            return CannedResponse(
                status: 401, text: "<Error><Code>401</Code><Detail>ExpiredToken: token expired</Detail></Error>")
        })
        defer { setup.stop() }
        let first = try await setup.run(RunRequest())
        #expect(first.report.outcome == .stopped)
        #expect(first.report.stop?.reason.contains("clock") == true)
        #expect(first.report.summary.pushesFailed == 0)
        #expect(first.report.summary.pushesPending == 3)
        #expect(first.report.items.allSatisfy { $0.decision == .pending })
        #expect(await setup.hub.requests().count == 1, "sending stops at the first hub-wide failure")
        await fixed.set()
        let second = try await setup.run(RunRequest())
        #expect(second.report.outcome == .complete)
        #expect(second.report.summary.pushesSent == 3)
        #expect(second.report.summary.pushesPending == 0)
        #expect(await setup.hub.requests().count == 4)
    }

    /// Every failure that concerns the hub rather than one push stops sending and keeps the
    /// pushes pending: 401, 403 without Retry-After (no Send right), 404 (no such hub).
    @Test(arguments: [401, 403, 404])
    func hubWideRefusalsStopSending(status: Int) async throws {
        let setup = try await Self.setUp(hubAnswer: { _ in CannedResponse(status: status) })
        defer { setup.stop() }
        let result = try await setup.run(RunRequest())
        #expect(result.report.outcome == .stopped)
        #expect(result.report.summary.pushesPending == 3)
        #expect(result.report.summary.pushesFailed == 0)
        #expect(await setup.hub.requests().count == 1)
        #expect(try setup.ledger().outbox().count == 3)
    }

    @Test func throttledPushStaysPendingAndIsRetriedNextRun() async throws {
        let counter = Counter()
        let setup = try await Self.setUp(
            hubAnswer: { request in
                // The first four sends of w1 (one try and three retries) are throttled.
                if String(decoding: request.body, as: UTF8.self).contains("/w1"), await counter.next() <= 4 {
                    return CannedResponse(status: 429, headers: [("Retry-After", "0")])
                }
                return CannedResponse(status: 201)
            }, worldItems: [("w1", "Only story", 5)])
        defer { setup.stop() }
        let first = try await setup.run(RunRequest())
        let world = try #require(first.report.items.first { $0.key.hasSuffix("w1") })
        #expect(world.decision == .pending)
        #expect(first.report.summary.pushesPending >= 1)
        #expect(first.report.summary.pendingUntil != nil)
        let second = try await setup.run(RunRequest())
        #expect(second.report.items.first { $0.key.hasSuffix("w1") }?.decision == .pushed)
        let third = try await setup.run(RunRequest())
        #expect(third.report.pushes.isEmpty)
    }

    @Test func oneBrokenFeedDoesNotStopTheOthers() async throws {
        let setup = try await Self.setUp()
        defer { setup.stop() }
        let text = try String(contentsOfFile: setup.configPath, encoding: .utf8)
            .replacingOccurrences(
                of: "feeds:\n",
                with:
                    "feeds:\n  - {url: \"\(setup.feeds.baseURL)/gone.xml\", category: Sports}\n  - {url: "
                    + "\"http://127.0.0.1:1/refused.xml\", category: Science}\n"
            )
        try text.write(toFile: setup.configPath, atomically: true, encoding: .utf8)
        let result = try await setup.run(RunRequest())
        #expect(result.report.summary.feedsFailed == 2)
        #expect(result.report.summary.feedsOk == 2)
        #expect(result.report.summary.pushesSent == 3)
        #expect(result.report.isPartial)
        let gone = try #require(result.report.feeds.first { $0.url.hasSuffix("gone.xml") })
        #expect(gone.status == .error && gone.httpStatus == 404)
        #expect(gone.error?.contains("gone.xml: HTTP 404") == true)
        let refused = try #require(result.report.feeds.first { $0.url.hasSuffix("refused.xml") })
        #expect(refused.error?.contains("connection refused") == true)
    }

    @Test func reportJSONHasTheSpecFields() async throws {
        let setup = try await Self.setUp()
        defer { setup.stop() }
        let result = try await setup.run(RunRequest(dryRun: true))
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(result.report.jsonText().utf8)) as? [String: Any])
        #expect(Set(object.keys) == ["dry_run", "started_at", "finished_at", "feeds", "items", "pushes", "summary"])
        let feed = try #require((object["feeds"] as? [[String: Any]])?.first)
        #expect(Set(feed.keys) == ["name", "url", "status", "http_status", "items", "new", "error"])
        let item = try #require((object["items"] as? [[String: Any]])?.first)
        #expect(Set(item.keys) == ["key", "feed", "title", "link", "category", "confidence", "decision", "reason"])
        let push = try #require((object["pushes"] as? [[String: Any]])?.first)
        #expect(
            Set(push.keys) == [
                "category", "tags", "properties", "item_key", "status", "http_status", "notification_id", "error",
            ])
        let summary = try #require(object["summary"] as? [String: Any])
        #expect(
            Set(summary.keys) == [
                "feeds_ok", "feeds_failed", "items_new", "pushes_sent", "pushes_failed", "pushes_pending",
                "pending_until",
                // The review queue's: how many wait for an editor, and the oldest's age.
                "review_held", "review_waiting", "review_oldest_age_seconds",
            ])
        #expect((object["started_at"] as? String)?.hasSuffix("Z") == true)
    }
}

actor Flag {
    var isSet = false
    func set() { isSet = true }
}

actor Counter {
    var value = 0
    func next() -> Int {
        value += 1
        return value
    }
}
