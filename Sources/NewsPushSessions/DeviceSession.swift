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

    /// Whether the caller may send to users.
    public var isSender: Bool {
        if case .user(_, let sender) = self { return sender }
        return false
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
    /// The network it came from (what the cap on new anonymous installations counts).
    public var network: String?

    /// A registration as received.
    public init(
        id: String, platform: String, handle: String, topics: [String], language: String? = nil,
        network: String? = nil
    ) {
        self.id = id
        self.platform = platform
        self.handle = handle
        self.topics = topics
        self.language = language
        self.network = network
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
    /// The hub did not take it, did not answer, or this instance's writes to it are all busy
    /// (503): the installation is exactly as it was, at the hub and in the index, and the phone
    /// tries again in `retryAfter` seconds.
    case hubUnavailable(String, retryAfter: Int)
    /// Past a cap of this caller or network (429 with `Retry-After`).
    case tooMany(String, retryAfter: Int)
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
    /// The hub's answer to this session's installation writes since `lastHubAnswer` was last
    /// set to nil (for the gate: the back-end resets it each time it lends the session out).
    public var lastHubAnswer: InstallationOutcome?
    /// What a registration asks for, worked out without the ledger.
    let planner: RegistrationPlanner

    /// Whether every session of the process shares this one's connection (SQLite's index).
    public var sharesOneConnection: Bool { ledger.isShared }

    /// Registration ids handed out by `POST /api/register` and not used within a day expire.
    public static let reservationLifetime = Ledger.reservationLifetime

    /// A session over `ledger` (opened with `Ledger.openIndex`) and the configured hub.
    public convenience init(context: SessionContext, ledger: Ledger) throws(SessionError) {
        self.init(
            context: context, ledger: ledger, hub: try context.hubClient(),
            planner: RegistrationPlanner(context: context))
    }

    /// A session over `ledger` with a hub client and planner kept between sessions (`SessionPool`).
    init(context: SessionContext, ledger: Ledger, hub: NotificationHubClient, planner: RegistrationPlanner) {
        self.context = context
        self.ledger = ledger
        self.hub = hub
        self.planner = planner
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

    /// Refuses to serve when the config gives plain user names to another source than the one
    /// the index's readers were registered under (SPEC §9, "Abuse"): turning on `api.jwt` with
    /// `names: own` over Basic readers' installations would hand their personal and secure
    /// pushes to token users of the same names, and turning it off the other way round. An index
    /// without plain-named readers takes the config's owner as it is; the first start records it.
    public func checkPlainNames() throws(SessionError) {
        let configured = api.plainNamesOwner
        do {
            let recorded = try ledger.plainNamesOwner()
            guard recorded != configured else { return }
            let named = try ledger.plainNamedReaders()
            guard let recorded, named.readers > 0 else { return try ledger.recordPlainNamesOwner(configured) }
            let problem = ConfigProblem(
                file: context.config.file, line: 0, key: "api.jwt.names",
                message: Self.plainNamesChange(
                    from: recorded, readers: named.readers, installations: named.installations))
            throw SessionError.config(ConfigError(problems: [problem]))
        } catch let error as SessionError {
            throw error
        } catch {
            throw .ledger(error as? LedgerError ?? .unreadable(path: context.config.statePath, reason: "\(error)"))
        }
    }

    static func plainNamesChange(from recorded: String, readers: Int, installations: Int) -> String {
        let whose = "\(readers) reader(s) with \(installations) installation(s) in the index"
        return recorded == "basic"
            ? "\(whose) signed in with Basic under plain names; with api.jwt.names: own (the default) a token "
                + "user of the same name would get their personal and secure pushes. Set api.jwt.names: prefixed "
                + "(token users are then jwt:SUB and Basic readers keep their names), or forget those readers "
                + "first (newspush devices forget-user NAME; `devices list` names them)"
            : "\(whose) signed in with tokens under plain names; without api.jwt.names: own a Basic user of the "
                + "same name would get their personal and secure pushes. Keep api.jwt with names: own, or forget "
                + "those readers first (newspush devices forget-user NAME; `devices list` names them)"
    }

    // MARK: Remembered credentials

    /// The digests of the Basic credentials the back-end's instances remember (SPEC §9).
    public var credentialDigests: CredentialDigests { CredentialDigests(secret: context.config.hub.connectionString) }

    /// Whether a Basic credential of this digest was found good within its lifetime.
    public func recallsCredential(_ digest: String) throws(SessionError) -> Bool {
        let since = context.clock.now().addingTimeInterval(-CredentialDigests.lifetime)
        do { return try ledger.recallsCredential(digest, since: since) } catch { throw .ledger(error) }
    }

    /// Remembers a Basic credential of `name` found good now, for the other instances and
    /// later starts.
    public func keepCredential(_ digest: String, name: String) throws(SessionError) {
        let now = context.clock.now()
        do {
            try ledger.keepCredential(
                digest, reader: credentialDigests.reader(name), at: now,
                expiredBefore: now.addingTimeInterval(-CredentialDigests.lifetime))
        } catch {
            throw .ledger(error)
        }
    }

    /// The name in the users file of a Basic user as the back-end forms it (`basic:alice` is
    /// `alice` when tokens own plain names); nil for a token user.
    func basicName(of user: String) -> String? {
        if api.isTokenUser(user) { return nil }
        return api.jwt?.names == .own && user.hasPrefix("basic:") ? String(user.dropFirst("basic:".count)) : user
    }

    // MARK: Registering

    /// The answer to `request` when it needs no hub request: refused (`invalid`), or the
    /// installation as the index holds it when the request changes nothing of it and its
    /// `refreshed` time is less than a day old (one read, no key taken: the app-open surge
    /// after an alert costs the hub nothing). Nil: it changes something.
    public func answerUnchanged(_ request: DeviceRegistration, caller: Caller) throws(SessionError)
        -> RegistrationOutcome?
    {
        let checked: (record: InstallationRecord, handle: String, ignored: [String])
        switch registration(request, caller: caller) {
        case .failure(let refusal): return .invalid(refusal.message)
        case .success(let value): checked = value
        }
        let found: (InstallationRecord, owed: Bool)?
        do { found = try ledger.installationAndOwed(id: checked.record.id) } catch { throw .ledger(error) }
        return RegistrationPlanner.unchanged(
            checked.record, ignored: checked.ignored, found: found, now: context.clock.now())
    }

    /// Writes `request` to the hub and the index, holding the keys of the id, the handle and
    /// the caller (`InstallationSync`), judging ownership against the index; the hub's answer
    /// is left in `lastHubAnswer`. `reservedFor`: the tutorials' `PUT /api/register/{id}`,
    /// whose id must be an installation's or handed out to that user.
    public func registerChange(
        _ request: DeviceRegistration, caller: Caller, reservedFor: String? = nil,
        quotas: (any NewInstallationAdmission)? = nil
    ) throws(SessionError) -> RegistrationOutcome {
        let checked: (record: InstallationRecord, handle: String, ignored: [String])
        switch registration(request, caller: caller) {
        case .failure(let refusal): return .invalid(refusal.message)
        case .success(let value): checked = value
        }
        return try write(
            checked.record, handle: checked.handle, ignored: checked.ignored, caller: caller, quotas: quotas,
            network: request.network
        ) { state throws in
            guard let user = reservedFor, state.current == nil else { return true }
            let since = context.clock.now().addingTimeInterval(-Self.reservationLifetime)
            return try ledger.registrationIdOwner(request.id, notBefore: since) == user
        }
    }

    /// The installation a request asks for (`RegistrationPlanner`).
    func registration(_ request: DeviceRegistration, caller: Caller)
        -> Result<(record: InstallationRecord, handle: String, ignored: [String]), DeviceRules.Refusal>
    {
        planner.registration(request, caller: caller, now: context.clock.now())
    }

    /// The installation as the hub takes it: the platform's template (body, headers, expiry),
    /// its body in the app's language when the categories have messages in it.
    func hubInstallation(_ record: InstallationRecord, handle: String) -> HubInstallation {
        HubInstallation(
            installationId: record.id, platform: record.platform, pushChannel: handle, tags: record.tags,
            templates: templates(platform: record.platform, language: record.language).templates)
    }

    /// The template set of a platform's installations in `language`, and its digest.
    func templates(platform: String, language: String?) -> (
        templates: [String: HubInstallation.Template], digest: String
    ) {
        planner.templates(platform: platform, language: language)
    }

    // MARK: Removing

    /// Removes installation `id` for `caller`, who must own it or present its handle.
    public func remove(id: String, caller: Caller, handle: String?) throws(SessionError) -> RemovalOutcome {
        let digest = handle.map(DeviceRules.digest)
        return try ordered([.id(id)]) { held throws -> Keyed<RemovalOutcome> in
            let current = try ledger.installation(id: id)
            if let current, !held.contains(.handle(current.handleDigest)) {
                return .needs([.handle(current.handleDigest)])
            }
            let result = try ledger.removeInstallation(id: id, at: context.clock.now()) { current in
                (current.owner != nil && current.owner == caller.name)
                    || (digest != nil && current.handleDigest == digest)
            }
            guard result.allowed else { return .done(.notYours) }
            guard result.removed != nil else { return .done(.absent) }
            return .done(.removed(hubError: deleteAtHub([id]).first))
        }
    }

    /// Removes every installation of `user` from the index and the hub, gives up the writes
    /// owed for them whose answers were lost, and erases every row of the ledger that names
    /// them, on the record as done by `by` ("the reader" when they asked themselves; the
    /// audit keeps the keyed pseudonym of the name, `api.pseudonym`, never the name). Holding the user's
    /// key, no registration of theirs runs meanwhile: nothing registered before the answer
    /// survives it. Returns how many were removed and the hub deletes that failed (still owed,
    /// finished later).
    public func forget(user: String, by: String) throws(SessionError) -> (removed: Int, failed: [String]) {
        let now = context.clock.now()
        let (removed, dropped) = try ordered([.user(user)]) { held throws -> Keyed<([String], [String])> in
            let rows = try ledger.installations(owner: user)
            let needed = Set(rows.flatMap { [InstallationKey.id($0.id), .handle($0.handleDigest)] })
            guard needed.isSubset(of: held) else { return .needs(needed) }
            var removed: [String] = []
            for record in rows {
                let result = try ledger.removeInstallation(id: record.id, at: now) { $0.owner == user }
                if result.removed != nil { removed.append(record.id) }
            }
            let dropped = try ledger.dropOwedWrites(owner: user)
            // Everything else that names them goes with them (SPEC §9, "Forgetting erases").
            let tag = api.tag(forUser: user)
            try ledger.eraseReader(
                user, tag: tag, digest: "sha256:" + Hex.sha256(Data(user.utf8)).prefix(16),
                credentials: basicName(of: user).map { [credentialDigests.reader($0)] } ?? []
            ) { Self.reach(of: $0, without: tag) }
            try ledger.recordAudit([
                AuditRecord(
                    at: now, editor: by == user ? "the reader" : by, action: .forgotten,
                    detail: "\(removed.count) installations of \(api.pseudonym(of: user)) removed from the hub and "
                        + "the index, and every row naming them erased")
            ])
            return .done((removed, dropped))
        }
        // Each removal, and each given-up write (which may have landed), under its own keys.
        var failed: [String] = []
        for id in removed + dropped { failed += try settle(owed: id) }
        return (removed.count, failed)
    }

    /// Empties the engine's own copies of what forgets erased (SQLite's write-ahead log):
    /// after `forget`, outside its transaction; the back-end does it once a minute at most.
    public func forgetErasedCopies() {
        ledger.forgetErased()
    }

    /// What a forgotten reader's tag leaves of a push's `expression`: nothing when it reached
    /// them alone, else the expression as it reached everyone else (their tag taken as absent:
    /// `World && !username:alice` is `World`). An expression that cannot be read (none the hub
    /// would have taken) is erased with them.
    static func reach(of expression: String, without tag: String) -> ForgottenReach {
        guard let node = try? TagExpression.parse(expression) else { return .onlyThem }
        switch node.deciding(tag, as: false) {
        case .constant(false): return .onlyThem
        // Everyone but them: the broadcast it was (an empty expression).
        case .constant(true): return .others("")
        case .depends(let rest): return .others(rest.text)
        }
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
        do {
            var counts = try ledger.installationCounts(userTagPrefix: api.userTagPrefix)
            counts.oldTemplates = try ledger.templateSetCounts().reduce(0) { old, group in
                group.digest == templates(platform: group.platform, language: group.language).digest
                    ? old : old + group.count
            }
            return counts
        } catch {
            throw .ledger(error)
        }
    }

    /// How many installations of the index tag expression `expression` reaches (SPEC §9: those
    /// registered straight with the hub are not in the index).
    public func count(expression: String) throws(SessionError) -> Int {
        let node: TagExpression.Node
        do { node = try TagExpression.parse(expression) } catch { throw .request(error) }
        let counted: Int?
        do { counted = try ledger.installationCount(matching: node) } catch { throw .ledger(error) }
        guard let counted else {
            throw .usage("--tags names \(node.tags.count) tags; reach is counted for at most 16")
        }
        return counted
    }

    /// How many installations carry `tag`.
    public func count(tag: String) throws(SessionError) -> Int {
        do { return try ledger.installationCount(tag: tag) } catch { throw .ledger(error) }
    }

    /// Deletes from hub and index what was not registered again within `api.stale_after` (each
    /// under its keys, judged again there: one registered since stays), finishes what is owed
    /// to the hub, and bounds the back-end's other rows.
    public func prune() throws(SessionError) -> DevicePruneOutcome {
        let cutoff = context.clock.now().addingTimeInterval(-api.staleAfter)
        var stale = 0
        var seen: Set<String> = []
        while true {
            let batch: [InstallationRecord]
            do { batch = try ledger.installations(refreshedBefore: cutoff, limit: 500) } catch { throw .ledger(error) }
            let fresh = batch.filter { seen.insert($0.id).inserted }
            if fresh.isEmpty { break }
            for record in fresh where try remove(stale: record, cutoff: cutoff) { stale += 1 }
        }
        do {
            try ledger.pruneBackEnd(retention: context.config.stateRetention, now: context.clock.now())
        } catch {
            throw .ledger(error)
        }
        let (finished, failed) = try finishOwed(grace: 0, limit: .max, waitingToo: true)
        return DevicePruneOutcome(stale: stale, finished: finished, failed: failed)
    }

    /// Removes `record` from the index, its removal owed to the hub, if it is still not
    /// refreshed since `cutoff` once its keys are held (one registered again since stays).
    private func remove(stale record: InstallationRecord, cutoff: Date) throws(SessionError) -> Bool {
        try ordered([.id(record.id), .handle(record.handleDigest)]) { held throws -> Keyed<Bool> in
            let result = try ledger.removeInstallation(id: record.id, at: context.clock.now()) {
                $0.refreshed < cutoff && held.contains(.handle($0.handleDigest))
            }
            return .done(result.removed != nil)
        }
    }
}
