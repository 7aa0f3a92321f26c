import Foundation
import NewsPushTesting
import Testing

/// The document as app developers use it: clients generated from the served `/openapi.json` by
/// swift-openapi-generator and openapi-python-client, built, and run through an app's flow
/// (Tests/clients) against the built `newspush api` and the emulator. A field a generated client
/// cannot send does not compile (Swift) or is a TypeError (Python): the flow fails.
@Suite("Generated clients", .serialized)
struct GeneratedClientTests {
    static let root = packageRoot

    /// The toolchain's `swift`, as the test process found it (or the machine's usual place).
    static let swift: String? = {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        return (path + ["/opt/swift/usr/bin", "/usr/bin"]).map { $0 + "/swift" }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// Whether the python3 on PATH has openapi-python-client (run as `python3 -m`, so that no
    /// console script's folder needs to be on PATH).
    static let pythonGenerator: Bool = {
        let probe = try? ChildProcess.run(
            "/usr/bin/env", ["python3", "-c", "import openapi_python_client"], environment: toolEnvironment,
            directory: nil, input: nil)
        return probe?.status == 0
    }()

    static var toolEnvironment: [String: String] {
        let inherited = ProcessInfo.processInfo.environment
        return [
            "HOME": NSHomeDirectory(),
            "PATH": (inherited["PATH"] ?? "") + ":/usr/local/bin:/usr/bin:/bin",
        ]
    }

    /// The served document (byte for byte what `GET /openapi.json` answers).
    static func servedDocument(_ fixture: ApiFixture) async throws -> String {
        let served = await fixture.send("GET /openapi.json")
        #expect(served.status == 200)
        return served.body
    }

    // swift-openapi-generator 1.14.3's build plugin over the served document, built with its
    // runtime and URLSession transport, the flow run against the back-end.
    @Test(.enabled(if: swift != nil, "no swift toolchain found on PATH"))
    func theGeneratedSwiftClientRunsAnAppsFlow() async throws {
        let fixture = try await ApiFixture.start()
        defer { fixture.stop() }
        // Under .build/ so that a second run builds only what changed (CI starts anew anyway).
        let package = Self.root.appendingPathComponent(".build/generated-clients/swift")
        try? FileManager.default.removeItem(at: package.appendingPathComponent("Sources"))
        try FileManager.default.createDirectory(at: package, withIntermediateDirectories: true)
        let template = Self.root.appendingPathComponent("Tests/clients/swift")
        for item in ["Package.swift", "Sources"] {
            try? FileManager.default.removeItem(at: package.appendingPathComponent(item))
            try FileManager.default.copyItem(
                at: template.appendingPathComponent(item), to: package.appendingPathComponent(item))
        }
        try await Self.servedDocument(fixture).write(
            to: package.appendingPathComponent("Sources/GeneratedClientFlow/openapi.json"), atomically: true,
            encoding: .utf8)
        let built = try await newspushRaw(
            try #require(Self.swift), ["build", "--package-path", package.path, "--product", "GeneratedClientFlow"],
            environment: Self.toolEnvironment)
        try #require(
            built.status == 0,
            "the generated client does not build:\n\(built.stdout.suffix(4000))\(built.stderr.suffix(2000))")
        let flow = try await newspushRaw(
            package.appendingPathComponent(".build/debug/GeneratedClientFlow").path,
            ["http://127.0.0.1:\(fixture.api.port)/", "alice", "alice-password"])
        try #require(flow.status == 0, "\(flow.stdout)\(flow.stderr)")
        try await Self.check(flow.stdout, fixture, prefix: "swift")
    }

    // openapi-python-client 0.29.1 over the served document; the flow (the Android flow of
    // docs/api.md) run with the generated models against the back-end.
    @Test(.enabled(if: pythonGenerator, "openapi-python-client is not installed (scripts/setup.sh --tests)"))
    func theGeneratedPythonClientRunsAnAppsFlow() async throws {
        let fixture = try await ApiFixture.start()
        defer { fixture.stop() }
        let document = fixture.folder.file("openapi.json")
        try await Self.servedDocument(fixture).write(toFile: document, atomically: true, encoding: .utf8)
        let generated = fixture.folder.file("generated")
        let made = try await newspushRaw(
            "/usr/bin/env",
            [
                "python3", "-m", "openapi_python_client", "generate", "--path", document, "--meta", "none",
                "--output-path", generated + "/newspush_client",
            ],
            environment: Self.toolEnvironment, in: fixture.folder.path)
        try #require(made.status == 0, "\(made.stdout)\(made.stderr)")
        let flow = try await newspushRaw(
            "/usr/bin/env",
            [
                "python3", Self.root.appendingPathComponent("Tests/clients/python/flow.py").path, generated,
                "http://127.0.0.1:\(fixture.api.port)/", "alice", "alice-password",
            ], environment: Self.toolEnvironment)
        try #require(flow.status == 0, "\(flow.stdout)\(flow.stderr)")
        try await Self.check(flow.stdout, fixture, prefix: "python")
    }

    /// The flow's report against what the back-end, the hub and the index hold.
    static func check(_ output: String, _ fixture: ApiFixture, prefix: String) async throws {
        let line = try #require(output.split(separator: "\n").last, "no report: \(output)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let anonymous = report["anonymous"] as? [String: Any]
        #expect(anonymous?["tags"] as? [String] == ["World", "Sports"], "\(report)")
        #expect(anonymous?["ignored"] as? [String] == ["Gardening"])
        #expect(await fixture.atHub("\(prefix)-anonymous")?.tags == ["World", "Sports"], "topics reached the hub")
        let indexed = try await fixture.index().first { $0["id"] as? String == "\(prefix)-anonymous" }
        #expect(
            indexed?["language"] as? String == "fr", "the language reached the index: \(String(describing: indexed))")
        let signedIn = report["signedIn"] as? [String: Any]
        #expect(signedIn?["tags"] as? [String] == ["Politics", "username:alice", "newspush:signed-in"], "\(report)")
        let tutorial = try #require((report["tutorial"] as? [String: Any])?["id"] as? String, "\(report)")
        #expect(tutorial.allSatisfy { $0.isNumber || $0 == "-" }, "the tutorials' id: \(tutorial)")
        let secure = report["secure"] as? [String: Any]
        #expect(secure?["payload"] as? String == "Your parcel is at the door", "\(report)")
        #expect(report["forgotten"] as? Bool == true)
        // Forgotten: alice's installations (the signed-in one and the tutorials') are gone; the
        // anonymous phone stays.
        #expect(await fixture.atHub("\(prefix)-signed-in") == nil)
        #expect(await fixture.atHub(tutorial) == nil)
        #expect(await fixture.atHub("\(prefix)-anonymous") != nil)
    }
}
