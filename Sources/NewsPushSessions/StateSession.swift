import Foundation
import NewsPushLedger
import NewsPushModel

/// What `state check` found.
public struct StateCheckOutcome: Sendable, Encodable {
    /// The ledger checked.
    public var ledger: String
    /// Whether the ledger passed every check.
    public var ok: Bool
    /// The ledger's schema version: nil when the file could not be read as a ledger.
    public var schemaVersion: Int?
    /// What the ledger holds, in a line (empty when it could not be read).
    public var summary: String
    /// Every problem found; empty when the ledger is healthy.
    public var problems: [String]
    /// Why the ledger could not be used at all, when it could not.
    public var error: LedgerError?

    enum CodingKeys: String, CodingKey { case ledger, ok, summary, problems, schemaVersion = "schema_version" }

    /// The document with `schema_version` null when unknown (not left out).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(ledger, forKey: .ledger)
        try container.encode(ok, forKey: .ok)
        try container.encode(summary, forKey: .summary)
        try container.encode(problems, forKey: .problems)
        try container.encode(schemaVersion, forKey: .schemaVersion)
    }
}

/// What `state prune` did.
public struct PruneOutcome: Sendable {
    /// Stories removed (each leaving a tombstone).
    public var removed: Int
    /// Stories kept.
    public var kept: Int
    /// Tombstones now in the ledger.
    public var tombstones: Int
}

/// What `state migrate` did.
public struct MigrateOutcome: Sendable {
    /// The ledger.
    public var path: String
    /// Its schema version now.
    public var schemaVersion: Int
    /// The JSON state file migrated into it, if one was.
    public var migratedFrom: String?
    /// Whether the ledger was created just now.
    public var created: Bool
}

/// The `state` commands as sessions over one ledger (`state:` of the config, or `--state`):
/// reading opens it read-only; every change takes the run lock first.
public struct StateSession: Sendable {
    /// The configured ledger (`state:`).
    public var location: String
    /// When the session runs.
    public var clock: SessionClock

    /// A session over the ledger configured as `location`.
    public init(location: String, clock: SessionClock = .system) {
        self.location = location
        self.clock = clock
    }

    /// The whole ledger (`state show`, `state export`); a missing ledger is an error here.
    public func view() throws(SessionError) -> LedgerView {
        do { return try LedgerView.read(try existing()) } catch { throw .ledger(error) }
    }

    /// SQLite's own check and the consistency checks; an unusable ledger is the answer, not an
    /// error.
    public func check() -> StateCheckOutcome {
        let path = LedgerLocation(configured: location).databasePath
        do {
            let ledger = try existing()
            let problems = try ledger.problems()
            // A row that cannot be read is one of the problems listed: the summary goes without it.
            let view = try? LedgerView.read(ledger)
            return StateCheckOutcome(
                ledger: ledger.path, ok: problems.isEmpty && view != nil, schemaVersion: Ledger.schemaVersion,
                summary: view?.summary ?? "", problems: problems)
        } catch {
            var version: Int?
            if case .newerSchema(_, let newer) = error { version = newer }
            return StateCheckOutcome(
                ledger: path, ok: false, schemaVersion: version, summary: "", problems: [error.description],
                error: error)
        }
    }

    /// Drops stories no feed has listed for longer than `retention` seconds.
    public func prune(retention: Double) throws(SessionError) -> PruneOutcome {
        try changing { ledger throws(LedgerError) in
            let removed = try ledger.prune(retention: retention, now: clock.now())
            let view = try LedgerView.read(ledger)
            return PruneOutcome(removed: removed, kept: view.stories.count, tombstones: view.tombstones.count)
        }
    }

    /// Forgets one story; false when the ledger knows no such key.
    public func forget(_ key: String) throws(SessionError) -> Bool {
        try changing { ledger throws(LedgerError) in try ledger.forget(key) }
    }

    /// Creates the ledger or brings it to this version's schema.
    public func migrate() throws(SessionError) -> MigrateOutcome {
        try changing { ledger throws(LedgerError) in
            MigrateOutcome(
                path: ledger.path, schemaVersion: Ledger.schemaVersion, migratedFrom: ledger.migratedFrom,
                created: ledger.isNew)
        }
    }

    /// Loads a whole ledger (or export, or legacy state) into this one, which must be empty.
    public func importLedger(from source: String) throws(SessionError) -> ImportOutcome {
        try changing { ledger throws(LedgerError) in
            ImportOutcome(ledger: ledger.path, counts: try ledger.load(from: source))
        }
    }

    /// The ledger, read-only; it must exist.
    private func existing() throws(LedgerError) -> Ledger {
        let ledger = try Ledger.open(configured: location, access: .read)
        if ledger.isNew { throw .noLedger(path: ledger.path) }
        return ledger
    }

    /// Runs `body` on the ledger opened to write, under the run lock.
    private func changing<T>(_ body: (Ledger) throws(LedgerError) -> T) throws(SessionError) -> T {
        try SessionLedger.with(location, .write) { ledger, _ in try body(ledger) }
    }
}

/// What `state import` loaded, into which ledger.
public struct ImportOutcome: Sendable {
    /// The ledger loaded into.
    public var ledger: String
    /// What the source was and how many rows of each table it gave.
    public var counts: ImportCounts
}
