import Foundation
import NewsPushCore
import NewsPushHTTP
import NewsPushTesting

/// The secure-push fetch surge (SPEC §9, docs/api.md "Signing requests"): after a secure push
/// every signed-in phone fetches its text at once.
extension ApiRegistrations {
    /// `readers` Basic readers and as many token (JWT) readers, each with one installation and
    /// one live secure push in a SQLite ledger, fetch their texts at once from a `newspush api`
    /// that has just started, so every fetch is that reader's first at this instance. The Basic
    /// readers' credentials are in the ledger as their earlier sign-ins left them (written here
    /// with the back-end's own digests: 10,000 bcrypt checks would take the bench half an hour);
    /// then the Basic round once more with nothing remembered, what a reader unseen for a month
    /// costs.
    func secureSurge(_ binary: String, folder: TemporaryFolder, hubPort: Int, readers: Int) async throws {
        let maker = TokenMaker()
        let jwks = try folder.write("surge-jwks.json", maker.jwks())
        let config = try folder.write(
            "surge.yaml",
            """
            hub: {name: breaking-news, connection_string: "${NEWSPUSH_HUB_CONNECTION_STRING}",
                endpoint: "http://127.0.0.1:\(hubPort)/", timeout: 60s}
            state: "surge-state.db"
            api:
              handle_shapes: loose
              rate: {per_address: 100000000/min, per_user: 100000000/min, new_anonymous_per_network: 100000000/day}
              jwt: {issuer: "\(TokenMaker.issuer)", audience: \(TokenMaker.audience), jwks: "\(jwks)", names: prefixed}
            feeds: []
            """)
        let environment = ["NEWSPUSH_HUB_CONNECTION_STRING=\(testConnectionString)", "PATH=/usr/bin:/bin"]
        let usersPath = folder.file("api-users.yaml")
        try BenchProcess.runToEnd(
            binary, ["api", "add-user", "seed", "--config", config], environment, input: "surge-password\n")
        let hash = try UsersFile<ApiRole>.load(path: usersPath).users["seed"]?.password ?? ""
        let names = (0..<readers).map { "surge\($0)" }
        try ("users:\n" + names.map { "  \"\($0)\": {role: reader, password: \"\(hash)\"}\n" }.joined())
            .write(toFile: usersPath, atomically: true, encoding: .utf8)
        try BenchProcess.runToEnd(binary, ["devices", "prune", "--config", config], environment)
        let database = folder.file("surge-state.db")
        try BenchProcess.runToEnd("/usr/bin/sqlite3", [database], [], input: Self.surgeRows(readers))
        try BenchProcess.runToEnd("/usr/bin/sqlite3", [database], [], input: Self.remembered(names, hash: hash))
        try await surgeRounds(binary, config: config, database: database, names: names, maker: maker)
    }

    /// The three rounds, each against a `newspush api` started for it.
    private func surgeRounds(
        _ binary: String, config: String, database: String, names: [String], maker: TokenMaker
    ) async throws {
        let readers = names.count
        let basic: @Sendable (Int) -> String = { n in
            let credential = Data("surge\(n):surge-password".utf8).base64EncodedString()
            return
                "GET /api/notifications/\(n + 1) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic \(credential)\r\n\r\n"
        }
        let tokens = names.map { maker.token(["sub": $0]) }
        let bearer: @Sendable (Int) -> String = { n in
            "GET /api/notifications/\(readers + n + 1) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(tokens[n])\r\n\r\n"
        }
        for (label, request, forget) in [
            ("Basic readers, credentials remembered in the ledger", basic, false),
            ("token (JWT) readers", bearer, false),
            ("Basic readers, nothing remembered (unseen for 30 days)", basic, true),
        ] {
            if forget {
                try BenchProcess.runToEnd(
                    "/usr/bin/sqlite3", [database], [], input: "DELETE FROM remembered_credentials;\n")
            }
            let api = try await BenchProcess.start(
                binary, ["api", "--listen", "127.0.0.1:0", "--config", config],
                ["NEWSPUSH_HUB_CONNECTION_STRING=\(testConnectionString)"])
            let timing = try LoadClients.run(port: api.port, clients: clients, count: readers, request: request)
            api.stop()
            print(
                "secure-push surge, \(readers) \(label), each one's first fetch at a fresh instance: "
                    + String(
                        format: "%.1f %% answered 200; ", 100 * Double(readers - timing.failures) / Double(readers))
                    + timing.line.replacingOccurrences(of: "registrations/s", with: "fetches/s"))
        }
    }

    /// The rows earlier sign-ins of `names` (password `surge-password`, bcrypt `hash`) left.
    static func remembered(_ names: [String], hash: String) -> String {
        let digests = CredentialDigests(secret: testConnectionString)
        let rows = names.map { name in
            let digest = digests.credential(name: name, password: "surge-password", hash: hash)
            return "('\(digest)', '\(digests.reader(name))', \(Int64(Date().timeIntervalSince1970 * 1000)))"
        }
        return "INSERT INTO remembered_credentials (digest, reader, checked_at) VALUES "
            + rows.joined(separator: ",\n") + ";\n"
    }

    /// Each reader's installation and live secure push: `surgeN` (Basic) reads push N + 1,
    /// `jwt:surgeN` (token) push `readers` + N + 1.
    static func surgeRows(_ readers: Int) -> String {
        let future = Int64(Date().addingTimeInterval(86400).timeIntervalSince1970 * 1000)
        let range = "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < \(readers - 1))"
        var sql = "PRAGMA journal_mode = WAL;\nBEGIN;\n"
        for (owner, first) in [("'surge' || i", 1), ("'jwt:surge' || i", readers + 1)] {
            sql += """
                \(range) INSERT INTO installations (id, owner, platform, tags, language, handle_digest, created_at, refreshed_at)
                SELECT 'p-' || \(owner), \(owner), 'fcmv1', 'World' || char(10) || 'username:' || \(owner), NULL,
                  'h-' || \(owner), 1700000000000, 1700000000000 FROM n;
                \(range) INSERT INTO installation_tags (tag, installation_id) SELECT 'username:' || \(owner), 'p-' || \(owner) FROM n;
                \(range) INSERT INTO secure_pushes (id, tags, texts, sender, created_at, expires_at)
                SELECT i + \(first), 'username:' || \(owner), '{"default":"Secret story ' || i || '"}', NULL,
                  1700000000000, \(future) FROM n;

                """
        }
        return sql + "COMMIT;\n"
    }
}
