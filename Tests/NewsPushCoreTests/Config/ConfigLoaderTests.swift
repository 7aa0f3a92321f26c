import Foundation
import NewsPushModel
import Testing

@testable import NewsPushCore
@testable import NewsPushLedger
@testable import NewsPushSessions

@Suite("Config loading (SPEC §4)")
struct ConfigLoaderTests {
    let environment = ["NEWSPUSH_HUB_CONNECTION_STRING": testConnectionString, "HUB_NAME": "breaking-news"]

    func load(_ yaml: String, environment: [String: String]? = nil) throws(ConfigError) -> NewsPushConfig {
        try ConfigLoader(environment: environment ?? self.environment).parse(yaml, file: "/etc/newspush/feeds.yaml")
    }

    func problems(_ yaml: String, environment: [String: String]? = nil) -> [ConfigProblem] {
        do {
            _ = try load(yaml, environment: environment)
            Issue.record("expected a configuration error")
            return []
        } catch {
            return error.problems
        }
    }

    @Test func fullConfigIsReadWithItsValues() throws {
        let config = try load(
            """
            hub:
              name: ${HUB_NAME}
              connection_string: ${NEWSPUSH_HUB_CONNECTION_STRING}
              endpoint: http://127.0.0.1:9090/
              api_version: "2020-06"
            state: data/state.json
            state_retention: 14d
            fetch: {concurrency: 8, per_host: 1, timeout: 1m30s, max_bytes: 512KB, contact: https://n.example/contact}
            policy:
              max_age: 90m
              budget: {per_category: 5, per: 2h}
              quiet_hours: {from: "23:00", to: "06:30", timezone: Europe/London}
              first_run: send
            categories:
              Sports: {tags: "Sports && !Betting", message: "{category}: {title}"}
            feeds:
              - url: https://example.org/world/rss.xml
                name: Example World
                category: World
              - url: https://example.org/all.xml
            """)
        #expect(config.hub.name == "breaking-news")
        #expect(config.hub.connectionString == testConnectionString)
        #expect(config.hub.endpoint == "http://127.0.0.1:9090/")
        #expect(config.statePath == "/etc/newspush/data/state.json")
        #expect(config.stateRetention == 14 * 86400)
        #expect(config.fetch.concurrency == 8)
        #expect(config.fetch.perHost == 1)
        #expect(config.fetch.timeout == 90)
        #expect(config.fetch.maxBytes == 512 * 1024)
        #expect(config.policy.maxAge == 5400)
        #expect(config.policy.budgetPerCategory == 5)
        #expect(config.policy.budgetWindow == 7200)
        #expect(config.policy.firstRun == .send)
        let quiet = try #require(config.policy.quietHours)
        #expect(quiet.from == 23 * 60 && quiet.to == 6 * 60 + 30)
        #expect(quiet.timeZone.identifier == "Europe/London")
        #expect(config.categories[.sports]?.tags == "Sports && !Betting")
        #expect(config.categories[.sports]?.message == "{category}: {title}")
        #expect(config.feeds.count == 2)
        #expect(config.feeds[0].category == .world)
        #expect(config.feeds[0].name == "Example World")
        #expect(config.feeds[1].category == nil)
        #expect(config.feeds[1].line == 20)
    }

    @Test func defaultsFollowTheSpec() throws {
        let config = try load(
            """
            hub: {name: news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}"}
            feeds: []
            """)
        #expect(config.hub.apiVersion == "2020-06")
        #expect(config.hub.endpoint == nil)
        #expect(config.statePath == "/etc/newspush/newspush-state.db")
        #expect(config.stateRetention == 30 * 86400)
        #expect(config.fetch.concurrency == 16)
        #expect(config.fetch.perHost == 2)
        #expect(config.fetch.timeout == 20)
        #expect(config.fetch.maxBytes == 10 * 1024 * 1024)
        #expect(config.policy.maxAge == 3 * 3600)
        #expect(config.policy.budgetPerCategory == 3)
        #expect(config.policy.budgetWindow == 3600)
        #expect(config.policy.firstRun == .baseline)
        #expect(config.policy.quietHours == nil)
        for category in NewsCategory.allCases {
            #expect(config.categories[category]?.tags == category.rawValue)
            #expect(config.categories[category]?.message == "Breaking {category} News : {title}")
        }
    }

    @Test(arguments: [
        ("20s", 20.0), ("3h", 10800), ("15m", 900), ("2d", 172_800), ("1h30m", 5400), ("500ms", 0.5), ("1w", 604_800),
    ])
    func durations(text: String, seconds: Double) {
        #expect(NodeReader.parseDuration(text) == seconds)
    }

    @Test(arguments: ["", "3 hours", "h", "-5s", "10x"])
    func invalidDurations(text: String) {
        #expect(NodeReader.parseDuration(text) == nil)
    }

    @Test(arguments: [
        ("10MB", 10_485_760), ("512KB", 524_288), ("1GB", 1_073_741_824), ("2048", 2048), ("1.5MiB", 1_572_864),
    ])
    func sizes(text: String, bytes: Int) {
        #expect(NodeReader.parseSize(text) == bytes)
    }

    @Test func unknownKeyIsNamedWithLineAndSuggestion() {
        let found = problems(
            """
            hub: {name: news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}"}
            fetch:
              concurency: 4
            feeds: []
            """)
        #expect(found.count == 1)
        #expect(found.first?.line == 3)
        #expect(found.first?.key == "fetch.concurency")
        #expect(found.first?.description.contains("did you mean 'concurrency'") == true)
        #expect(found.first?.description.hasPrefix("/etc/newspush/feeds.yaml:3: fetch.concurency: unknown key") == true)
    }

    @Test func wrongTypesAreReported() {
        let found = problems(
            """
            hub: {name: news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}"}
            fetch: {concurrency: many, timeout: soon, max_bytes: huge}
            policy: {budget: 3}
            feeds: {url: https://example.org/rss}
            """)
        let keys = Set(found.map(\.key))
        #expect(keys == ["fetch.concurrency", "fetch.timeout", "fetch.max_bytes", "policy.budget", "feeds"])
        #expect(found.first { $0.key == "fetch.concurrency" }?.message.contains("whole number") == true)
        #expect(found.first { $0.key == "feeds" }?.message.contains("must be a list") == true)
        #expect(found.allSatisfy { $0.line > 0 })
    }

    @Test func unknownCategoryIsReportedWhereverItAppears() {
        let found = problems(
            """
            hub: {name: news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}"}
            categories:
              Sport: {tags: Sports}
            feeds:
              - url: https://example.org/a.xml
                category: Weather
            """)
        #expect(found.count == 2)
        #expect(found[0].key == "categories.Sport" && found[0].line == 3)
        #expect(found[0].message.contains("did you mean Sports?"))
        #expect(found[1].key == "feeds[0].category" && found[1].line == 6)
        #expect(found[1].message.contains("World, Politics, Business, Technology, Science, Sports"))
    }

    @Test func missingVariableIsNamed() {
        let found = problems(
            """
            hub:
              name: news
              connection_string: ${NEWSPUSH_HUB_CONNECTION_STRING}
            feeds: []
            """, environment: [:])
        #expect(found.count == 1)
        #expect(found[0].line == 3)
        #expect(found[0].key == "hub.connection_string")
        #expect(found[0].message == "environment variable NEWSPUSH_HUB_CONNECTION_STRING is not set")
    }

    @Test func everyProblemIsReportedAtOnce() {
        let found = problems(
            """
            hub:
              name: news
              connection_string: ${MISSING_VAR}
            state_retention: forever
            policy:
              first_run: sometimes
              quiet_hours: {from: "25:00", to: "06:00", timezone: Mars/Olympus}
            categories:
              World: {tags: "World && $bad", message: "{headline}"}
            feeds:
              - name: no url here
              - url: ftp://example.org/feed
              - url: https://example.org/a.xml
                colour: red
            """, environment: [:])
        let keys = found.map(\.key)
        #expect(keys.contains("hub.connection_string"))
        #expect(keys.contains("state_retention"))
        #expect(keys.contains("policy.first_run"))
        #expect(keys.contains("policy.quiet_hours.from"))
        #expect(keys.contains("policy.quiet_hours.timezone"))
        #expect(keys.contains("categories.World.tags"))
        #expect(keys.contains("categories.World.message"))
        #expect(keys.contains("feeds[0].url"))
        #expect(keys.contains("feeds[1].url"))
        #expect(keys.contains("feeds[2].colour"))
        #expect(found.count == 10)
        let description = ConfigError(problems: found).description
        #expect(description.hasPrefix("configuration error (10 problems):"))
    }

    /// Only a whole `${VAR}` reference (or a file named through one) may give the connection
    /// string; a key in the file is refused however it is spelt, and never repeated.
    @Test(arguments: [
        "\"\(testConnectionString)\"",
        "\"\(testConnectionString.replacingOccurrences(of: "SharedAccessKey=", with: "sharedaccesskey="))\"",
        "\"\(testConnectionString.replacingOccurrences(of: "SharedAccessKey=", with: "SharedAccessKey ="))\"",
        "\"Endpoint=sb://contoso-news.servicebus.windows.net/;SharedAccessKeyName=${NAME};SharedAccessKey=\(testKey)\"",
        "\"${NEWSPUSH_HUB_CONNECTION_STRING};SharedAccessKey=\(testKey)\"",
        "\"prefix ${NEWSPUSH_HUB_CONNECTION_STRING}\"",
    ])
    func literalSecretsAreRefused(value: String) {
        let found = problems(
            """
            hub:
              name: news
              connection_string: \(value)
            feeds: []
            """, environment: ["NAME": "Send", "NEWSPUSH_HUB_CONNECTION_STRING": testConnectionString])
        #expect(found.count == 1)
        #expect(found.first?.key == "hub.connection_string")
        #expect(found.first?.message.contains("must be one ${VAR} reference") == true)
        // The problem text must not repeat the key, or any 12 characters of it.
        let text = found.map(\.description).joined()
        for start in 0...(testKey.count - 12) {
            let piece = String(testKey.dropFirst(start).prefix(12))
            #expect(!text.contains(piece), "the error repeats part of the key: \(piece)")
        }
    }

    /// Fuzzing found it: a `${VAR}` used where it does not belong was quoted back expanded, so
    /// the connection string's key appeared in the error. Values are quoted as written.
    @Test func problemsQuoteValuesAsWrittenNotExpanded() {
        let found = problems(
            """
            hub: {name: news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}"}
            state: "postgres://news:${DB_PASSWORD}@db.example/news?sslmode=maybe"
            policy: {max_age: "${NEWSPUSH_HUB_CONNECTION_STRING}"}
            feeds:
              - url: "https://example.org/${NEWSPUSH_HUB_CONNECTION_STRING}"
              - url: "ftp://example.org/${DB_PASSWORD}/feed.xml"
            """, environment: ["NEWSPUSH_HUB_CONNECTION_STRING": testConnectionString, "DB_PASSWORD": "pw-0123456789"])
        #expect(found.count >= 2)
        let text = found.map(\.description).joined(separator: "\n")
        #expect(text.contains("'${NEWSPUSH_HUB_CONNECTION_STRING}' is not a duration"), "\(text)")
        #expect(!text.contains("pw-0123456789"), "\(text)")
        for start in 0...(testKey.count - 12) {
            let piece = String(testKey.dropFirst(start).prefix(12))
            #expect(!text.contains(piece), "the error repeats part of the key: \(piece)")
        }
    }

    @Test func aDeeplyNestedCategoryTagExpressionIsAConfigProblem() {
        let deep = String(repeating: "(", count: 100_000) + "World" + String(repeating: ")", count: 100_000)
        let found = problems(
            """
            hub: {name: news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}"}
            categories:
              World: {tags: "\(deep)"}
            feeds: []
            """)
        #expect(found.map(\.key) == ["categories.World.tags"])
    }

    @Test func theConnectionStringMayComeFromAFileNamedByAVariable() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        try folder.write("hub-connection", testConnectionString + "\n")
        let config = try ConfigLoader(environment: ["CREDENTIALS_DIRECTORY": folder.path]).parse(
            """
            hub: {name: news, connection_string_file: "${CREDENTIALS_DIRECTORY}/hub-connection"}
            feeds: []
            """, file: "feeds.yaml")
        #expect(config.hub.connectionString == testConnectionString)
        let literalPath = problems(
            """
            hub: {name: news, connection_string_file: "\(folder.path)/hub-connection"}
            feeds: []
            """)
        #expect(literalPath.first?.message.contains("must start with a ${VAR} reference") == true)
    }

    /// A malformed connection string is explained by the part that is wrong, never its value.
    @Test(arguments: [
        "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Send;SharedAccessKey:\(testKey)",
        "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Send;SharedAccesKey=\(testKey)",
        "Endpoint=;SharedAccessKeyName=Send;SharedAccessKey=\(testKey)",
        "\(testKey)",
    ])
    func malformedConnectionStringsNeverEchoTheKey(value: String) {
        let found = problems(
            """
            hub: {name: news, connection_string: "${CS}"}
            feeds: []
            """, environment: ["CS": value])
        #expect(found.count == 1)
        let text = found.map(\.description).joined()
        for start in 0...(testKey.count - 12) {
            #expect(
                !text.contains(String(testKey.dropFirst(start).prefix(12))),
                "the error repeats part of the key: \(text)")
        }
    }

    @Test func badConnectionStringIsExplained() {
        let found = problems(
            """
            hub: {name: news, connection_string: "${CS}"}
            feeds: []
            """, environment: ["CS": "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Send"])
        #expect(found.count == 1)
        #expect(found[0].message.contains("missing SharedAccessKey"))
    }

    @Test func missingSectionsAreRequired() {
        let found = problems("state: x.json\n")
        #expect(Set(found.map(\.key)) == ["hub", "feeds"])
    }

    @Test func yamlSyntaxErrorsHaveALine() {
        let found = problems("hub:\n  name: [unclosed\nfeeds: []\n")
        #expect(found.count == 1)
        #expect(found[0].line >= 2)
        #expect(found[0].message.hasPrefix("not valid YAML"))
    }

    @Test func duplicateFeedsAreReported() {
        let found = problems(
            """
            hub: {name: news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}"}
            feeds:
              - url: https://example.org/a.xml
              - url: https://example.org/a.xml
            """)
        #expect(found.count == 1)
        #expect(found[0].line == 4)
        #expect(found[0].message.contains("already listed at line 3"))
    }

    @Test func unreadableFileIsNamed() {
        do {
            _ = try ConfigLoader(environment: [:]).load(path: "/nonexistent/feeds.yaml")
            Issue.record("expected an error")
        } catch {
            #expect(error.problems.first?.file == "/nonexistent/feeds.yaml")
            #expect(error.description.contains("cannot read the file"))
        }
    }

    @Test func theShippedConfigsLoad() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        for name in ["feeds.yaml", "Examples/feeds.yaml"] {
            let config = try ConfigLoader(
                environment: environment.merging(["NEWSPUSH_HUB_ENDPOINT": "http://127.0.0.1:9/"]) { $1 }
            )
            .load(path: root.appendingPathComponent(name).path)
            #expect(!config.feeds.isEmpty, "\(name) has no feeds")
        }
        let newsroom = try ConfigLoader(environment: environment).load(
            path: root.appendingPathComponent("feeds.yaml").path)
        let sections = Set(newsroom.feeds.compactMap(\.category))
        #expect(sections == Set(NewsCategory.allCases), "feeds.yaml follows a section feed for every category")
    }

    @Test func reviewRulesAreReadAndEveryMistakeNamed() throws {
        let hub =
            "hub: {name: h, connection_string: \"${NEWSPUSH_HUB_CONNECTION_STRING}\"}\nfeeds: [{url: https://a.example/rss}]\n"
        let config = try load(
            hub + """
                review:
                  rules:
                    - {category: Politics, mode: review}
                    - {feed: Wire, title: "(?i)dead", mode: auto}
                  notify: {tags: "newsroom-editors"}
                """)
        #expect(config.review.rules.map(\.mode) == [.review, .auto])
        #expect(config.review.rules[0].category == .politics && config.review.rules[1].feed == "Wire")
        #expect(config.review.notifyTags == "newsroom-editors")
        let wrong = problems(
            hub + """
                review:
                  rules:
                    - {category: Gossip, mode: review}
                    - {title: "(", mode: review}
                    - {mode: review}
                    - {category: World}
                    - {category: World, mode: maybe}
                  notify: {}
                """
        ).map(\.description).joined(separator: "\n")
        for expected in [
            "review.rules[0].category: 'Gossip' is not one of",
            "review.rules[1].title: '(' is not a regular expression",
            "review.rules[2]: needs category, feed or title", "review.rules[3]: needs mode",
            "review.rules[4].mode: must be auto or review", "review.notify: needs tags",
        ] {
            #expect(wrong.contains(expected), "\(expected) in \(wrong)")
        }
    }
}

extension ConfigLoaderTests {
    static let minimal = """
        hub: {name: n, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}"}
        feeds: [{url: https://example.org/feed.xml, category: World}]
        """

    // `watch:` (SPEC §10): the interval and its bounds, the listener, WebSub, the lease and the
    // ping tokens; a feed's own `websub`.
    @Test func watchKeysAreReadAndChecked() throws {
        let config = try load(Self.minimal + "\nwatch: {interval: 2m, min_interval: 30s, max_interval: 1h}")
        #expect(config.watch.interval == 120 && config.watch.minInterval == 30 && config.watch.maxInterval == 3600)
        #expect(try load(Self.minimal).watch == WatchSettings())
        #expect(WatchSettings().listen == "127.0.0.1:8082" && WatchSettings().lease == 120)
        let inverted = problems(Self.minimal + "\nwatch: {interval: 10s, min_interval: 30s}")
        #expect(
            inverted.contains { $0.key == "watch" && $0.message.contains("min_interval ≤ interval") }, "\(inverted)")
        let full = try load(
            """
            hub: {name: n, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}"}
            feeds:
              - {url: https://example.org/a.xml, name: a, websub: https://hub.example.org/}
              - {url: https://example.org/b.xml, name: b, websub: off}
              - {url: https://example.org/c.xml, name: c}
            watch:
              listen: "[::1]:9090"
              callback_url: https://push.example.org/websub/
              websub: off
              lease: 30s
              ping_tokens: "a=0123456789abcdef0123, b = fedcba9876543210fedc"
            """)
        #expect(full.watch.listen == "[::1]:9090" && full.watch.callbackURL == "https://push.example.org/websub/")
        #expect(!full.watch.webSub && full.watch.lease == 30)
        #expect(full.watch.pingTokens == ["a": "0123456789abcdef0123", "b": "fedcba9876543210fedc"])
        #expect(full.feeds.map(\.webSub) == [.hub("https://hub.example.org/"), .off, nil])
        #expect(try load(Self.minimal + "\nwatch: {listen: off}").watch.listen == nil)
        let wrong = problems(
            Self.minimal + "\nwatch: {listen: nowhere, websub: sometimes, ping_tokens: \"a=short\", lease: 0s}")
        let said = wrong.map { "\($0.key): \($0.message)" }.joined(separator: "\n")
        for expected in [
            "watch.listen: must be HOST:PORT", "watch.websub: must be auto or off", "watch.ping_tokens: each entry",
            "watch.lease: must be at least 1s",
        ] {
            #expect(said.contains(expected), "\(expected) in \(said)")
        }
        #expect(!said.contains("short"), "a token is never repeated: \(said)")
    }
}
