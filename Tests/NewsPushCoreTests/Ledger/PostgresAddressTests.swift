import Foundation
import NewsPushModel
import NewsPushTesting
import Testing

@testable import NewsPushLedger

/// `state: postgres://…`: what the URL says, where the password comes from, and what is refused.
@Suite("PostgreSQL addresses and passwords")
struct PostgresAddressTests {
    @Test func aURLNamesUserHostPortDatabaseAndTLS() throws {
        let address = try PostgresAddress(
            "postgresql://news%40room:${DB_PW}@db.example:6432/breaking?sslmode=verify-full&connect_timeout=3",
            environment: [:])
        #expect(address.user == "news@room" && address.host == "db.example" && address.port == 6432)
        #expect(address.database == "breaking" && address.tls == .verifyFull && address.connectTimeout == 3)
        #expect(address.passwordVariable == "DB_PW")
        #expect(address.description == "postgres://news@room@db.example:6432/breaking")
        let v6 = try PostgresAddress("postgres://u@[::1]:5433/d", environment: [:])
        #expect(v6.host == "::1" && v6.port == 5433 && v6.hostAndPort == "[::1]:5433" && v6.tls == .prefer)
        let defaults = try PostgresAddress("postgres://", environment: ["PGUSER": "ops", "PGHOST": "h"])
        #expect(defaults.user == "ops" && defaults.host == "h" && defaults.port == 5432 && defaults.database == "ops")
    }

    @Test(arguments: [
        ("postgres://u:hunter2@h/d", "literal password"),
        ("postgres://u:${}@h/d", "literal password"),
        ("postgres://u@h:99999/d", "not a port"),
        ("postgres://u@h/d?sslmode=sometimes", "sslmode 'sometimes'"),
        ("postgres://u@h/d?pool=3", "unknown parameter 'pool'"),
    ])
    func whatCannotBeUsedIsRefusedWithoutQuotingAPassword(url: String, says: String) {
        #expect(throws: PostgresAddress.Problem.self) { try PostgresAddress(url, environment: [:]) }
        do { _ = try PostgresAddress(url, environment: [:]) } catch {
            #expect(error.message.contains(says), "\(error.message)")
            #expect(!error.message.contains("hunter2"))
        }
        #expect(!PostgresAddress.redacting(url).contains("hunter2"))
    }

    @Test func thePasswordComesFromTheNamedVariableThenPGPASSWORDThenThePasswordFile() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanup() }
        let passfile = try folder.write(
            "pgpass",
            """
            # host:port:database:user:password
            other:5432:*:news:not-this-one
            db.example:5432:breaking:news:from\\:file
            *:*:*:*:fallback
            """)
        let named = try PostgresAddress("postgres://news:${DB_PW}@db.example/breaking", environment: [:])
        let plain = try PostgresAddress("postgres://news@db.example/breaking", environment: [:])
        let elsewhere = try PostgresAddress("postgres://news@else.example/breaking", environment: [:])
        #expect(try PostgresPassword.find(for: named, environment: ["DB_PW": "a", "PGPASSWORD": "b"]) == "a")
        #expect(throws: DatabaseError.self) { try PostgresPassword.find(for: named, environment: ["PGPASSWORD": "b"]) }
        #expect(try PostgresPassword.find(for: plain, environment: ["PGPASSWORD": "b", "PGPASSFILE": passfile]) == "b")
        #expect(try PostgresPassword.find(for: plain, environment: ["PGPASSFILE": passfile]) == "from:file")
        #expect(try PostgresPassword.find(for: elsewhere, environment: ["PGPASSFILE": passfile]) == "fallback")
        #expect(try PostgresPassword.find(for: plain, environment: ["HOME": folder.path]) == nil)
    }

    @Test func placeholdersAreNumberedOutsideQuotedText() {
        #expect(
            PostgresDatabase.numberPlaceholders("SELECT '?' || x FROM t WHERE a = ? AND b IN (?, ?)")
                == "SELECT '?' || x FROM t WHERE a = $1 AND b IN ($2, $3)")
    }
}
