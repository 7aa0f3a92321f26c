import Foundation
import HubEmulator
import NewsPushTesting
import Testing

/// The hub key never appears anywhere newspush writes: outputs, logs, reports, the ledger and
/// its journal, the metrics file — on the good path and on every error path.
@Suite("Secrets stay secret")
struct SecretsTests {
    static let devices = """
        hub: breaking-news
        devices:
          - {id: phone, platform: apple, tags: [World], template: '{"aps":{"alert":"$(messageParam)"}}'}
        """

    /// Whether `text` holds the key or any 12 characters of it.
    static func leak(in data: Data, key: String = testKey) -> String? {
        let haystack = String(decoding: data, as: UTF8.self)
        for start in 0...(key.count - 12) {
            let piece = String(key.dropFirst(start).prefix(12))
            if haystack.contains(piece) { return piece }
        }
        return nil
    }

    @Test func noOutputLogLedgerOrReportHoldsTheKey() async throws {
        try await withNewsroom(devices: Self.devices) { hub, folder in
            let feeds = try await LocalHTTPServer.serving([
                "/world.xml": CannedResponse(
                    text: rssFeed(title: "World", items: [("s1", "Secret-free story", 1), ("s2", "Another story", 2)]))
            ])
            defer { feeds.stop() }
            let config = try folder.write(
                "feeds.yaml",
                """
                hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}",
                    endpoint: "\(hub.endpoint)", retries: 0}
                policy: {first_run: send}
                feeds:
                  - {url: "\(feeds.baseURL)/world.xml", category: World}
                """)
            let metrics = folder.file("metrics.prom")
            var outputs: [(String, CommandResult)] = []
            func record(_ name: String, _ arguments: [String], environment: [String: String] = hubEnvironment)
                async throws
            {
                outputs.append((name, try await newspush(arguments, environment: environment)))
            }
            try await record("preview", ["preview", "--config", config, "-v", "--show-requests"])
            try await record(
                "preview json", ["preview", "--config", config, "-v", "--show-requests", "--format", "json"])
            try await record(
                "run",
                ["run", "--config", config, "-v", "--show-requests", "--report", "full", "--metrics-file", metrics])
            try await record(
                "publish",
                [
                    "publish", "--config", config, "-v", "--category", "World", "--title", "Manual", "--yes",
                    "--format",
                    "json",
                ])
            try await record(
                "publish dry run",
                ["publish", "--config", config, "-v", "--category", "World", "--title", "Manual two", "--dry-run"])
            try await record(
                "test-send", ["hub", "test-send", "--config", config, "-v", "--category", "World", "--title", "Test"])
            try await record("check", ["check", "--config", config, "-v", "--format", "json"])
            try await record("state show", ["state", "show", "--config", config, "--format", "json"])
            try await record("state export", ["state", "export", "--config", config])
            try await record("hub status", ["hub", "status", "--config", config, "--last", "3", "--format", "json"])
            // Error paths: a wrong key (401), and connection strings broken in every way.
            let wrongKey = testConnectionString.replacingOccurrences(of: "AAECAwQF", with: "ZZECAwQF")
            try await record(
                "wrong key",
                ["publish", "--config", config, "-v", "--category", "World", "--title", "Wrong key", "--yes"],
                environment: ["NEWSPUSH_HUB_CONNECTION_STRING": wrongKey])
            for broken in [
                "Endpoint=sb://contoso-news.servicebus.windows.net/;SharedAccessKeyName="
                    + "DefaultFullSharedAccessSignature;SharedAccessKey:\(testKey)",
                "Endpoint=sb://contoso-news.servicebus.windows.net/;SharedAccessKey=\(testKey)",
                "SharedAccessKey=\(testKey);Endpoint=;SharedAccessKeyName=x",
                "\(testKey)",
                "Endpoint=sb://contoso-news.servicebus.windows.net/;SharedAccessKeyName=x;SharedAccesKey=\(testKey)",
            ] {
                try await record(
                    "broken \(broken.prefix(20))", ["run", "--config", config, "-v"],
                    environment: ["NEWSPUSH_HUB_CONNECTION_STRING": broken])
                try await record(
                    "broken check", ["check", "--config", config, "--format", "json"],
                    environment: ["NEWSPUSH_HUB_CONNECTION_STRING": broken])
            }
            let literal = try folder.write(
                "literal.yaml",
                """
                hub: {name: breaking-news, connection_string: "\(testConnectionString)"}
                feeds: []
                """)
            try await record("literal key", ["check", "--config", literal])

            for (name, result) in outputs {
                #expect(
                    Self.leak(in: Data((result.stdout + result.stderr).utf8)) == nil, "\(name) printed part of the key")
            }
            #expect(outputs.first { $0.0 == "run" }?.1.status == 0)
            #expect(outputs.first { $0.0 == "wrong key" }?.1.status == 1)
            #expect(outputs.filter { $0.0.hasPrefix("broken") }.allSatisfy { $0.1.status == 78 })
            // Every file newspush wrote: the ledger, its write-ahead log and shared memory, the metrics.
            let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter {
                !$0.hasSuffix(".yaml")
            }
            #expect(files.contains("newspush-state.db") && files.contains("metrics.prom"))
            for file in files {
                let data = try Data(contentsOf: URL(fileURLWithPath: folder.file(file)))
                #expect(Self.leak(in: data) == nil, "\(file) holds part of the key")
            }
        }
    }
}
