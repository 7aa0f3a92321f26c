import Foundation
import NewsPushCore
import NewsPushLedger
import NewsPushModel
import NotificationHubs

/// What a step run under installation keys came to: done, or it needs keys it does not hold
/// (it read the index and found it touches more: the id's old handle, the handle's other
/// installations).
enum Keyed<T> {
    case done(T)
    case needs(Set<InstallationKey>)
}

/// Keeping the hub and the index in step (SPEC §9, "A phone stays registered"). Every change
/// of an installation holds the keys of what it touches (`ordered`) from before it reads the
/// index until the hub and the index both have it; a write to the hub is noted as owed before
/// it goes out (`Ledger.oweHubWrite`) and settled by its answer, so a host that dies in
/// between, a hub that fails and an answer that is lost all leave a note that `settle(owed:)`
/// finishes: the write landed (it is recorded) or the hub is made to hold what the index holds.
extension DeviceSession {
    /// How long a phone's request waits on the hub's retries before it is answered 503.
    public static let hubPatience: Double = 20

    /// Runs `step` holding `keys` and whatever more it says it needs: all are let go and taken
    /// again, in their one order, with the new ones. `step` reads the index again each time.
    func ordered<T>(_ keys: Set<InstallationKey>, _ step: (_ held: Set<InstallationKey>) throws -> Keyed<T>)
        throws(SessionError) -> T
    {
        var held = keys
        for _ in 0..<16 {
            let result: Keyed<T>
            do {
                result = try ledger.withKeys(held, waiting: { noteWait(held) }) { try step(held) }
            } catch let error as SessionError {
                throw error
            } catch let error as LedgerError {
                throw .ledger(error)
            } catch {
                throw .ledger(.writeFailed(path: ledger.path, reason: "\(error)"))
            }
            switch result {
            case .done(let value): return value
            case .needs(let more): held.formUnion(more)
            }
        }
        throw .ledger(.writeFailed(path: ledger.path, reason: "installation \(keys) kept changing; try again"))
    }

    /// Says (at `info`) that a change waits for another change of what it touches: an operator
    /// sees why a request took long, and a test sees that a race it made is happening.
    private func noteWait(_ keys: Set<InstallationKey>) {
        let ids = keys.compactMap { key -> String? in
            if case .id(let id) = key { return id }
            return nil
        }.sorted()
        let what = ids.isEmpty ? "the same reader's devices" : "installation " + ids.joined(separator: ", ")
        context.logger.info("api: a change waits for another change of \(what)")
    }

    // MARK: Writing

    /// Writes `record` to the hub and then the index, holding the keys of its id, its handle,
    /// the id's present handle, the handle's other installations and the caller. `mayUse`
    /// judges the index's state (the tutorials' reserved ids). A registration that changes
    /// nothing is answered from the index.
    func write(
        _ record: InstallationRecord, handle: String, ignored: [String], caller: Caller,
        quotas: (any NewInstallationAdmission)? = nil, network: String? = nil,
        mayUse: (InstallationState) throws -> Bool
    ) throws(SessionError) -> RegistrationOutcome {
        var keys: Set<InstallationKey> = [.id(record.id), .handle(record.handleDigest)]
        if let name = caller.name { keys.insert(.user(name)) }
        return try ordered(keys) { held throws -> Keyed<RegistrationOutcome> in
            let state = try ledger.installationState(id: record.id, handleDigest: record.handleDigest)
            var needed = Set(state.holders.map { InstallationKey.id($0.id) })
            if let current = state.current { needed.insert(.handle(current.handleDigest)) }
            guard needed.isSubset(of: held) else { return .needs(needed) }
            guard try mayUse(state), DeviceRules.mayChange(state.current, by: caller, with: record) else {
                return .done(.notYours)
            }
            if let current = state.current, state.owed == nil, current.isSameRegistration(as: record) {
                return .done(.registered(try refresh(current), ignored: ignored))
            }
            let isNewDevice = state.current == nil && state.holders.isEmpty
            if isNewDevice, caller.name.map(api.isTokenUser) ?? true, let quotas,
                let refusal = try quotas.admitNew(
                    network: network, now: context.clock.now(), count: { try ledger.installationTotal() })
            {
                return .done(refusal)
            }
            let evicted = try overTheDeviceCap(record, caller: caller, state: state)
            let evictionKeys = Set(evicted.flatMap { [InstallationKey.id($0.id), .handle($0.handleDigest)] })
            guard evictionKeys.isSubset(of: held) else { return .needs(evictionKeys) }
            return .done(
                try writeToHub(record, handle: handle, ignored: ignored, state: state, evicting: evicted.map(\.id)))
        }
    }

    /// The caller's oldest installations that `record` pushes past `api.max_devices_per_user`
    /// (those the write replaces anyway, of the same handle or id, are not counted twice).
    private func overTheDeviceCap(_ record: InstallationRecord, caller: Caller, state: InstallationState) throws
        -> [InstallationRecord]
    {
        guard let name = caller.name else { return [] }
        let going = Set(state.holders.map(\.id) + [record.id])
        let others = try ledger.installations(owner: name).filter { !going.contains($0.id) }
        let over = others.count + 1 - api.maxDevicesPerUser
        guard over > 0 else { return [] }
        return Array(others.sorted { ($0.refreshed, $0.id) < ($1.refreshed, $1.id) }.prefix(over))
    }

    /// An unchanged registration: the `refreshed` time written at most once a day.
    func refresh(_ current: InstallationRecord) throws -> InstallationRecord {
        let now = context.clock.now()
        guard now.timeIntervalSince(current.refreshed) >= Self.refreshInterval else { return current }
        try ledger.touchInstallation(id: current.id, at: now)
        var touched = current
        touched.refreshed = now
        return touched
    }

    /// An unchanged installation's `refreshed` time is written again after this long.
    static let refreshInterval: Double = 86400

    /// The write itself: noted as owed, sent (retried as sends are), then recorded. The index
    /// changes only once the hub took it: a hub that refuses or does not answer leaves the
    /// installation exactly as it was, and the note for whoever settles what is owed (even a
    /// refusal may follow a try that landed: libcurl sends a request again, unasked, when a
    /// kept-alive connection closes before an answer).
    private func writeToHub(
        _ record: InstallationRecord, handle: String, ignored: [String], state: InstallationState,
        evicting: [String] = []
    ) throws -> RegistrationOutcome {
        try ledger.oweHubWrite(of: record, at: context.clock.now())
        // An earlier write of the id whose answer was lost may still land after this one: the
        // hub is then checked against the index once more.
        let verify = state.owed != nil
        let outcome = hub.put(
            hubInstallation(record, handle: handle), now: SessionClock.signingTime(), within: Self.hubPatience)
        lastHubAnswer = outcome
        guard outcome == .done else {
            var retryAfter: Double?
            if case .refused(_, _, let seconds) = outcome { retryAfter = seconds }
            return unavailable(record.id, outcome, retryAfter: retryAfter)
        }
        let replaced = state.holders.map(\.id).filter { $0 != record.id } + evicting
        try ledger.recordInstallation(record, previous: state.current, replacing: replaced, verify: verify)
        let failed = deleteAtHub(replaced)
        if !failed.isEmpty { context.logger.warning("api: replaced installations still owed: \(failed[0])") }
        return .registered(record, ignored: ignored)
    }

    private func unavailable(_ id: String, _ outcome: InstallationOutcome, retryAfter: Double?) -> RegistrationOutcome {
        let why = outcome.failure ?? "the hub did not take it"
        context.logger.warning("api: installation \(id) not written to the hub (left as it was): \(why)")
        let seconds = Int((retryAfter ?? Self.defaultRetryAfter).rounded(.up))
        return .hubUnavailable(why + "; the installation is unchanged: try again later", retryAfter: max(1, seconds))
    }

    /// What a phone is told to wait when the hub said nothing of it.
    static let defaultRetryAfter: Double = 30

    // MARK: Removing and settling

    /// Deletes `ids` at the hub (their keys held, their rows gone from the index) and settles
    /// what was owed for them; returns what failed (still owed, finished later).
    func deleteAtHub(_ ids: [String]) -> [String] {
        var done: [String] = []
        var failed: [String] = []
        for id in ids {
            let outcome = hub.deleteInstallation(id: id, now: SessionClock.signingTime(), within: Self.hubPatience)
            if let failure = outcome.failure { failed.append("\(id): \(failure)") } else { done.append(id) }
        }
        do { try ledger.hubAgrees(done) } catch {
            context.logger.warning("api: removals done at the hub not recorded (they are repeated later): \(error)")
        }
        return failed
    }

    /// Finishes what has been owed to the hub for more than `grace` seconds (a host killed
    /// between the index and the hub, a hub that was down, an answer that was lost); returns
    /// how many were finished and what failed. A note whose settling fails waits longer each
    /// time (`Ledger.owedFailed`), behind the others; three failures in a row end the pass (a hub
    /// that is down is not asked a thousand times, each waiting out its timeout). `waitingToo`:
    /// the notes still waiting after a failure are tried as well, after the others (an
    /// operator's `devices prune` settles everything owed now, or says what it could not).
    public func finishOwed(grace: Double = 30, limit: Int = 1000, waitingToo: Bool = false) throws(SessionError)
        -> (Int, [String])
    {
        let now = context.clock.now()
        let owed: [String]
        do {
            owed = try ledger.owedHubStates(
                before: now.addingTimeInterval(-grace), dueBy: waitingToo ? .distantFuture : now, limit: limit)
        } catch {
            throw .ledger(error)
        }
        var failed: [String] = []
        var finished = 0
        var inARow = 0
        var tried = 0
        for id in owed where inARow < Self.failuresEndingAPass {
            tried += 1
            let failures = try settle(owed: id)
            failed += failures
            if failures.isEmpty {
                finished += 1
                inARow = 0
            } else {
                inARow += 1
                do { try ledger.owedFailed([id], at: now) } catch { throw .ledger(error) }
            }
        }
        let untried = owed.count - tried
        if untried > 0 { failed.append("\(untried) more not tried this time: the hub failed three in a row") }
        return (finished, failed)
    }

    /// Failures in a row that end a pass over what is owed.
    static let failuresEndingAPass = 3

    /// Makes the hub agree with the index about `id`, holding its keys: a write whose answer
    /// was lost and that landed is recorded (it was the last word on the id); otherwise the hub
    /// is made to hold what the index holds. Returns what failed (still owed).
    func settle(owed id: String) throws(SessionError) -> [String] {
        try ordered([.id(id)]) { held throws -> Keyed<[String]> in
            guard let owed = try ledger.owedHubState(id: id) else { return .done([]) }
            let row = try ledger.installation(id: id)
            var needed: Set<InstallationKey> = []
            if let row { needed.insert(.handle(row.handleDigest)) }
            var holders: [String] = []
            if let intended = owed.intended {
                holders = try ledger.installationState(id: id, handleDigest: intended.handleDigest).holders.map(\.id)
                needed.formUnion([.handle(intended.handleDigest)] + holders.map { .id($0) })
                // A forget of the owner gives the write up under this key.
                if let owner = intended.owner { needed.insert(.user(owner)) }
            }
            guard needed.isSubset(of: held) else { return .needs(needed) }
            // A removal owed: the delete, which is the same whatever the hub holds.
            if row == nil && owed.intended == nil { return .done(deleteAtHub([id])) }
            let atHub: HubInstallation?
            switch hub.installation(id: id, now: SessionClock.signingTime()) {
            case .failure(let error): return .done(["\(id): \(error.reason)"])
            case .success(let found): atHub = found
            }
            if let intended = owed.intended, let atHub, landed(intended, at: atHub) {
                let replaced = holders.filter { $0 != id }
                try ledger.recordInstallation(intended, previous: row, replacing: replaced, verify: false)
                return .done(deleteAtHub(replaced))
            }
            return .done(try agree(id, row: row, atHub: atHub))
        }
    }

    /// Whether the hub holds what `intended` writes: its handle, platform, tags and templates.
    private func landed(_ intended: InstallationRecord, at hub: HubInstallation) -> Bool {
        DeviceRules.digest(hub.pushChannel) == intended.handleDigest && hub.platform == intended.platform
            && Set(hub.tags) == Set(intended.tags)
            && hub.templates == templates(platform: intended.platform, language: intended.language).templates
    }

    /// The hub made to hold what the index holds for `id`: nothing (a delete); the row's tags
    /// and templates on the handle the hub has for it, when that is the row's handle; or, when
    /// the hub holds the id on another handle (a write given up that landed), nothing in
    /// either place: the phone registers again at its next start.
    private func agree(_ id: String, row: InstallationRecord?, atHub: HubInstallation?) throws -> [String] {
        guard let atHub else {
            try ledger.hubAgrees([id])
            return []
        }
        guard let row else { return deleteAtHub([id]) }
        guard DeviceRules.digest(atHub.pushChannel) == row.handleDigest else {
            _ = try ledger.removeInstallation(id: id, at: context.clock.now()) { _ in true }
            return deleteAtHub([id])
        }
        let wanted = hubInstallation(row, handle: atHub.pushChannel)
        if wanted.platform != atHub.platform || Set(wanted.tags) != Set(atHub.tags)
            || wanted.templates != atHub.templates
        {
            let outcome = hub.put(wanted, now: SessionClock.signingTime(), within: Self.hubPatience)
            if let failure = outcome.failure { return ["\(id): \(failure)"] }
        }
        try ledger.hubAgrees([id])
        return []
    }
}
