import Foundation
import NewsPushCore
import NewsPushLedger
import NewsPushModel
import NotificationHubs

/// Who is asking: a signed-in user (with the role their credential gives), or nobody.
public enum Caller: Sendable, Equatable {
    /// No credential was presented.
    case anonymous
    /// A verified user.
    case user(name: String, sender: Bool)

    /// The user's name, if signed in.
    public var name: String? {
        if case .user(let name, _) = self { return name }
        return nil
    }
}

/// A device's registration as a phone sends it (`PUT /api/installations/{id}` or the
/// tutorials' `PUT /api/register/{id}`).
public struct DeviceRegistration: Sendable, Equatable {
    /// The installation id.
    public var id: String
    /// The platform as the app names it (`apns`, `fcmv1`, `gcm`, `fcm`, `wns`…).
    public var platform: String
    /// The push handle (APNs token, FCM token, WNS channel URI).
    public var handle: String
    /// The topics the app asks for.
    public var topics: [String]
    /// The language of the app, if it said.
    public var language: String?

    /// A registration as received.
    public init(id: String, platform: String, handle: String, topics: [String], language: String? = nil) {
        self.id = id
        self.platform = platform
        self.handle = handle
        self.topics = topics
        self.language = language
    }
}

/// What a registration came to.
public enum RegistrationOutcome: Sendable, Equatable {
    /// Written to the hub and the index, with these tags; `ignored` are the topics dropped.
    case registered(InstallationRecord, ignored: [String])
    /// Something in the request is wrong (400): the sentence says what.
    case invalid(String)
    /// The id belongs to another user or device (403; the tutorials' route answers 410).
    case notYours
    /// The hub refused the installation (502) or could not be reached (503).
    case hubFailed(String, unreachable: Bool)
}

/// What a removal came to.
public enum RemovalOutcome: Sendable, Equatable {
    /// Gone from the index, and from the hub unless `hubError` says why not yet (the removal is
    /// owed and finished later).
    case removed(hubError: String?)
    /// There was none.
    case absent
    /// The installation is another user's or device's.
    case notYours
}

/// What `devices prune` did.
public struct DevicePruneOutcome: Sendable, Equatable, Encodable {
    /// Installations deleted for being stale.
    public var stale: Int
    /// Removals owed to the hub that were finished.
    public var finished: Int
    /// Removals the hub refused or did not answer (still owed).
    public var failed: [String]
}

/// The app back-end's work on devices (SPEC §9): which tags a phone may carry, who may change
/// an installation, and keeping the hub and the ledger's index in step. One session per thread:
/// it holds one connection to the ledger and the hub's client.
public final class DeviceSession {
    /// The newsroom.
    public let context: SessionContext
    /// The ledger's index (on SQLite, one connection every session of the process shares).
    public let ledger: Ledger
    let hub: NotificationHubClient

    /// Registration ids handed out by `POST /api/register` and not used within a day expire.
    public static let reservationLifetime: Double = 86400

    /// A session over `ledger` (opened with `Ledger.openIndex`) and the configured hub.
    public init(context: SessionContext, ledger: Ledger) throws(SessionError) {
        self.context = context
        self.ledger = ledger
        self.hub = try context.hubClient()
    }

    /// Opens the ledger's index for `context` (`verify`: check the file first); `reading`: to
    /// look only (`devices list|count`), without checking or changing the file.
    public static func open(context: SessionContext, verify: Bool = true, reading: Bool = false)
        throws(SessionError) -> DeviceSession
    {
        do {
            let path = context.config.statePath
            return try DeviceSession(
                context: context,
                ledger: reading
                    ? try Ledger.open(configured: path, access: .read)
                    : try Ledger.openIndex(configured: path, verify: verify))
        } catch let error as SessionError {
            throw error
        } catch {
            throw .ledger(error as? LedgerError ?? .unreadable(path: context.config.statePath, reason: "\(error)"))
        }
    }

    var api: ApiSettings { context.config.api }

    // MARK: Registering

    /// Registers `request` for `caller`: checks it, decides its tags, then writes the index
    /// (judging ownership inside the transaction) and the hub. A hub that refuses leaves the
    /// index without the installation and its removal owed.
    public func register(_ request: DeviceRegistration, caller: Caller) throws(SessionError) -> RegistrationOutcome {
        guard DeviceRules.isValidId(request.id) else {
            return .invalid("the installation id must be 1 to 64 of A-Z a-z 0-9 . _ -")
        }
        if caller == .anonymous && !api.anonymous {
            return .invalid("sign in first: this back-end takes no anonymous installations")
        }
        let platform: String
        let handle: String
        switch DeviceRules.check(platform: request.platform, handle: request.handle) {
        case .failure(let why): return .invalid(why.message)
        case .success(let checked): (platform, handle) = checked
        }
        if let language = request.language, !DeviceRules.isLanguage(language) {
            return .invalid("language '\(language)' is not a language tag (en, fr, pt-BR)")
        }
        let (tags, ignored) = DeviceRules.tags(asked: request.topics, caller: caller, settings: api)
        let now = context.clock.now()
        let record = InstallationRecord(
            id: request.id, owner: caller.name, platform: platform, tags: tags,
            language: request.language?.lowercased(), handleDigest: DeviceRules.digest(handle),
            created: now, refreshed: now)
        let replaced: [String]
        do {
            guard
                let written = try ledger.recordInstallation(
                    record, mayChange: { current, _ in DeviceRules.mayChange(current, by: caller, with: record) })
            else { return .notYours }
            replaced = written
        } catch {
            throw .ledger(error)
        }
        let outcome = hub.put(hubInstallation(record, handle: handle), now: SessionClock.signingTime())
        guard outcome == .done else { return try undo(record, outcome: outcome) }
        finishRemovals(replaced)
        return .registered(record, ignored: ignored)
    }

    /// The hub did not take the installation: it leaves the index, and its removal from the hub
    /// is owed (a write whose answer was lost may have landed).
    private func undo(_ record: InstallationRecord, outcome: InstallationOutcome) throws(SessionError)
        -> RegistrationOutcome
    {
        do {
            _ = try ledger.removeInstallation(id: record.id, at: context.clock.now()) {
                $0.handleDigest == record.handleDigest
            }
        } catch {
            throw .ledger(error)
        }
        context.logger.warning("api: installation \(record.id) not written to the hub: \(outcome)")
        switch outcome {
        case .refused(let status, let detail):
            return .hubFailed("the hub refused it (\(status)): \(detail)", unreachable: false)
        case .unreachable(let why): return .hubFailed("the hub could not be reached: \(why)", unreachable: true)
        case .done: return .hubFailed("", unreachable: false)
        }
    }

    /// The installation as the hub takes it: the platform's template, in the app's language
    /// when the categories have messages in it.
    func hubInstallation(_ record: InstallationRecord, handle: String) -> HubInstallation {
        var body = api.templates[record.platform] ?? ""
        if let language = record.language.map(DeviceRules.propertySuffix),
            context.config.languages.contains(language)
        {
            body = body.replacingOccurrences(of: "$(messageParam)", with: "$(messageParam_\(language))")
        }
        return HubInstallation(
            installationId: record.id, platform: record.platform, pushChannel: handle, tags: record.tags,
            templates: ["newspush": .init(body: body)])
    }

    // MARK: Removing

    /// Removes installation `id` for `caller`, who must own it or present its handle.
    public func remove(id: String, caller: Caller, handle: String?) throws(SessionError) -> RemovalOutcome {
        let digest = handle.map(DeviceRules.digest)
        let result: (removed: InstallationRecord?, allowed: Bool)
        do {
            result = try ledger.removeInstallation(id: id, at: context.clock.now()) { current in
                (current.owner != nil && current.owner == caller.name)
                    || (digest != nil && current.handleDigest == digest)
            }
        } catch {
            throw .ledger(error)
        }
        guard result.allowed else { return .notYours }
        guard result.removed != nil else { return .absent }
        return .removed(hubError: finishRemovals([id]).first)
    }

    /// Removes every installation of `user` from the index and the hub, on the record as done
    /// by `by` (the audit keeps the first 16 hex digits of the name's SHA-256, not the name: a
    /// forgotten reader is not named, yet the record can be matched to a name given). Returns
    /// how many were removed and the hub deletes that failed (still owed, finished later).
    public func forget(user: String, by: String) throws(SessionError) -> (removed: Int, failed: [String]) {
        let now = context.clock.now()
        var removed: [String] = []
        do {
            for record in try ledger.installations(owner: user) {
                let result = try ledger.removeInstallation(id: record.id, at: now) { $0.owner == user }
                if result.removed != nil { removed.append(record.id) }
            }
            // The secure texts addressed to that reader alone go with them.
            try ledger.deleteSecurePushes(tags: api.tag(forUser: user))
            try ledger.recordAudit([
                AuditRecord(
                    at: now, editor: by, action: .forgotten,
                    detail: "\(removed.count) installations of user sha256:"
                        + ApiSettings.hexDigest(Data(user.utf8)).prefix(16) + " removed from the hub and the index")
            ])
        } catch {
            throw .ledger(error)
        }
        return (removed.count, finishRemovals(removed))
    }

    /// Deletes `ids` from the hub and marks the removals done; returns what failed (still owed).
    @discardableResult
    func finishRemovals(_ ids: [String]) -> [String] {
        var done: [String] = []
        var failed: [String] = []
        for id in ids {
            switch hub.deleteInstallation(id: id, now: SessionClock.signingTime()) {
            case .done: done.append(id)
            case .refused(let status, let detail): failed.append("\(id): the hub answered \(status): \(detail)")
            case .unreachable(let why): failed.append("\(id): \(why)")
            }
        }
        do { try ledger.removedAtHub(done) } catch {
            context.logger.warning("api: removals done at the hub not recorded (they are repeated later): \(error)")
        }
        return failed
    }

    /// Finishes removals owed for more than `grace` seconds (a host killed between the index
    /// and the hub, a hub that was down); returns how many were finished and what failed.
    public func finishOwedRemovals(grace: Double = 30, limit: Int = 1000) throws(SessionError) -> (Int, [String]) {
        let owed: [String]
        do {
            owed = try ledger.owedHubRemovals(before: context.clock.now().addingTimeInterval(-grace), limit: limit)
        } catch {
            throw .ledger(error)
        }
        let failed = finishRemovals(owed)
        return (owed.count - failed.count, failed)
    }

    // MARK: The tutorials' registration ids

    /// `POST /api/register?handle=H`: the id of the installation holding `handle` if any, else
    /// a new id (recorded for `caller`, so `PUT /api/register/{id}` knows it).
    public func registrationId(handle: String?, caller: String) throws(SessionError) -> String {
        do {
            if let handle, !handle.isEmpty,
                let holder = try ledger.installation(handleDigest: DeviceRules.digest(handle))
            {
                return holder.id
            }
            let id = DeviceRules.newRegistrationId()
            let now = context.clock.now()
            try ledger.reserveRegistrationId(
                id, owner: caller, at: now, expiredBefore: now.addingTimeInterval(-Self.reservationLifetime))
            return id
        } catch {
            throw .ledger(error)
        }
    }

    /// Whether `PUT /api/register/{id}` may go ahead for `caller` with `handle`: the id is an
    /// installation's (the rules of ownership then decide) or was handed out to `caller` and has
    /// not expired. False: the app asks for a new id (410).
    public func mayUseRegistrationId(_ id: String, caller: String) throws(SessionError) -> Bool {
        do {
            if try ledger.installation(id: id) != nil { return true }
            let since = context.clock.now().addingTimeInterval(-Self.reservationLifetime)
            return try ledger.registrationIdOwner(id, notBefore: since) == caller
        } catch {
            throw .ledger(error)
        }
    }

    // MARK: Reading and pruning

    /// Whether the ledger answers and the hub takes the key: nil, or what is wrong.
    public func probe() throws(SessionError) -> String? {
        do { _ = try ledger.installation(id: "-") } catch { throw .ledger(error) }
        switch hub.installationStatus(id: "newspush-health-probe", now: SessionClock.signingTime()) {
        case 200?, 404?: return nil
        case let status?: return "the hub answered \(status) (is the key right?)"
        case nil: return "the hub cannot be reached"
        }
    }

    /// Installations as `filter` selects.
    public func list(_ filter: InstallationFilter) throws(SessionError) -> [InstallationRecord] {
        do { return try ledger.installations(filter) } catch { throw .ledger(error) }
    }

    /// The index in numbers.
    public func counts() throws(SessionError) -> InstallationCounts {
        do { return try ledger.installationCounts(userTagPrefix: api.userTagPrefix) } catch { throw .ledger(error) }
    }

    /// How many installations of the index tag expression `expression` reaches (SPEC §9: those
    /// registered straight with the hub are not in the index).
    public func count(expression: String) throws(SessionError) -> Int {
        let node: TagExpression.Node
        do { node = try TagExpression.parse(expression) } catch { throw .request(error) }
        let tags = node.tags.sorted()
        guard tags.count <= 16 else { throw .usage("--tags names \(tags.count) tags; reach is counted for at most 16") }
        do { return try ledger.installationCount(tags: tags, matches: node.matches) } catch { throw .ledger(error) }
    }

    /// How many installations carry `tag`.
    public func count(tag: String) throws(SessionError) -> Int {
        do { return try ledger.installationCount(tag: tag) } catch { throw .ledger(error) }
    }

    /// Deletes from hub and index what was not registered again within `api.stale_after`, and
    /// finishes the removals still owed to the hub.
    public func prune() throws(SessionError) -> DevicePruneOutcome {
        let cutoff = context.clock.now().addingTimeInterval(-api.staleAfter)
        var stale = 0
        do {
            while true {
                let batch = try ledger.installations(refreshedBefore: cutoff, limit: 500)
                if batch.isEmpty { break }
                for record in batch {
                    let result = try ledger.removeInstallation(id: record.id, at: context.clock.now()) {
                        $0.refreshed < cutoff
                    }
                    if result.removed != nil { stale += 1 }
                }
            }
        } catch {
            throw .ledger(error)
        }
        do { try ledger.deleteExpiredSecurePushes(now: context.clock.now()) } catch { throw .ledger(error) }
        let (finished, failed) = try finishOwedRemovals(grace: 0, limit: .max)
        return DevicePruneOutcome(stale: stale, finished: finished, failed: failed)
    }
}
