import Foundation
import NewsPushCore
import NewsPushLedger
import NewsPushModel
import NotificationHubs

/// What a message to one reader came to.
public enum MessageOutcome: Sendable, Equatable {
    /// The hub accepted it.
    case sent(notificationId: String?)
    /// The request is wrong (400).
    case invalid(String)
    /// The hub refused it or could not be reached (502), with its reason.
    case hubFailed(String)
}

/// What a secure push came to.
public enum SecureSendOutcome: Sendable, Equatable {
    /// At least one platform's send was accepted.
    case sent(secureId: Int)
    /// The request is wrong (400).
    case invalid(String)
    /// Over the hourly limit (429), with the seconds until the next is allowed.
    case tooMany(retryAfter: Int)
    /// The hub took neither send (502).
    case hubFailed(String)
}

/// A secure push's text as its reader fetches it.
public struct SecureText: Sendable, Equatable, Encodable {
    /// The `secureId`.
    public var id: Int
    /// The text.
    public var payload: String
    /// Whether this reader fetched it before.
    public var read: Bool

    enum CodingKeys: String, CodingKey {
        case id = "Id", payload = "Payload", read = "Read"
    }
}

extension DeviceSession {
    // MARK: Messages to one reader

    /// `POST /api/notifications?pns=…&to_tag=U`: a native push `From {caller}: {text}` to user
    /// `user`'s tag, through the outbox once (journalled, audited, never retried by a run). The
    /// payloads are built with real JSON and XML encoding, so the text arrives as typed.
    public func message(_ text: String, to user: String, from caller: String, pns: String) throws(SessionError)
        -> MessageOutcome
    {
        guard let platform = HubInstallation.platform(forApp: pns) else {
            return .invalid("pns '\(pns)' is not one of apns, gcm, fcm, fcmv1, wns")
        }
        guard !AlertText.isBlank(text) else { return .invalid("the message is blank") }
        let now = context.clock.now()
        let alert = "From \(caller): \(text)"
        guard alert.count <= Self.messageLimit else {
            return .invalid(
                "the message is \(text.count) characters; with \"From \(caller): \" at most \(Self.messageLimit) are "
                    + "sent, and nothing is cut: shorten it")
        }
        let tags = api.tag(forUser: user)
        let format: PushFormat = platform == "apns" ? .apple : platform == "wns" ? .wns : .fcmv1
        let entry = OutboxEntry(
            storyKey: "message:" + OutboxEntry.newID(), kind: .personal, origin: .publish, category: .world,
            format: format, tags: tags, properties: ["messageParam": alert, "from": caller], createdAt: now,
            freshUntil: now.addingTimeInterval(context.config.policy.maxAge))
        let request: HubRequest
        do { request = try Self.messageRequest(alert, format: format, tags: tags, client: hub) } catch {
            return .invalid(error.description)
        }
        do {
            try ledger.recordAudit([
                AuditRecord(
                    at: now, editor: caller, action: .published, entryID: entry.id, storyKey: entry.storyKey,
                    detail: "a message through newspush api to one reader: \(tags)")
            ])
        } catch {
            throw .ledger(error)
        }
        let sender = OutboxSender(client: hub, concurrency: 1, logger: context.logger, now: now)
        let outcome = try OneShotSend.send(entry, ledger: ledger, sender: sender, now: now) { _ in
            [PlatformRequest(format: format, request: request)]
        }.outcome
        switch outcome.status {
        case .sent, .scheduled: return .sent(notificationId: outcome.notificationId)
        default: return .hubFailed(outcome.error ?? "the hub did not take it")
        }
    }

    /// The longest message to a reader, `From {caller}: ` included (characters).
    public static let messageLimit = 1000

    /// The native request of a message: apple `{"aps":{"alert":…}}`, FCM v1 with the text as
    /// the notification's body and as `data.message` (what the tutorials' Android app reads), a
    /// WNS toast.
    static func messageRequest(_ alert: String, format: PushFormat, tags: String, client: NotificationHubClient)
        throws(HubError) -> HubRequest
    {
        let now = SessionClock.signingTime()
        switch format {
        case .apple:
            return try client.nativeRequest(
                .apple, payload: ["aps": ["alert": alert, "sound": "default"]], tags: tags, now: now)
        case .wns:
            return try client.windowsToastRequest(xml: NotificationHubClient.toast(alert), tags: tags, now: now)
        default:
            let message: [String: Any] = ["notification": ["body": alert], "data": ["message": alert]]
            return try client.nativeRequest(.fcmv1, payload: ["message": message], tags: tags, now: now)
        }
    }

    // MARK: Secure pushes

    /// How long the text of a secure push sent through the app back-end stays fetchable.
    public static let secureLifetime: Double = 86400
    /// The longest secure push text (characters).
    public static let secureLimit = 4000

    /// Secure pushes a user may send to their own devices in an hour.
    public static let secureHourlyLimit = 10

    /// `POST /api/notifications` without `to_tag`: a secure push of `text` to `caller`'s own
    /// devices: an id-only push through the outbox once, its text kept in the ledger for a day
    /// (`SecurePush`), each device given only the `secureId`. The hourly limit is counted and the
    /// push recorded holding the caller's key, so requests at once, on any instance, never pass
    /// it together.
    public func securePush(_ text: String, caller: String) throws(SessionError) -> SecureSendOutcome {
        try ordered([.user(caller)]) { _ throws -> Keyed<SecureSendOutcome> in
            .done(try securePushHoldingKey(text, caller: caller))
        }
    }

    private func securePushHoldingKey(_ text: String, caller: String) throws(SessionError) -> SecureSendOutcome {
        guard !AlertText.isBlank(text) else { return .invalid("the message is blank") }
        guard text.count <= Self.secureLimit else {
            return .invalid(
                "the message is \(text.count) characters; at most \(Self.secureLimit) are kept, and nothing is cut: "
                    + "shorten it")
        }
        let now = context.clock.now()
        do {
            let recent = try ledger.securePushTimes(sender: caller, since: now.addingTimeInterval(-3600))
            if recent.count >= Self.secureHourlyLimit, let oldest = recent.first {
                return .tooMany(
                    retryAfter: max(1, Int(oldest.addingTimeInterval(3600).timeIntervalSince(now).rounded(.up))))
            }
        } catch {
            throw .ledger(error)
        }
        let entry = OutboxEntry(
            storyKey: "secure:" + OutboxEntry.newID(), kind: .personal, origin: .publish, category: .world,
            format: .idOnly, tags: api.tag(forUser: caller),
            properties: ["messageParam": text, "from": caller], createdAt: now,
            freshUntil: now.addingTimeInterval(Self.secureLifetime), expiresAfter: Self.secureLifetime)
        let sender = OutboxSender(client: hub, concurrency: 1, logger: context.logger, now: now)
        let hub = self.hub
        let sent = try OneShotSend.send(entry, ledger: ledger, sender: sender, now: now) {
            entry throws(HubError) in
            try PushRequests.requests(entry, client: hub, now: SessionClock.signingTime())
        }
        guard let id = sent.entry.properties[SecurePush.idProperty].flatMap(Int.init) else {
            return .hubFailed(sent.outcome.error ?? "the push could not be built")
        }
        let reached = sent.answers.contains { if case .accepted = $0 { true } else { false } }
        return reached ? .sent(secureId: id) : .hubFailed(sent.outcome.error ?? "the hub did not take it")
    }

    /// `GET /api/notifications/{secureId}` for `caller`: the text, in the language of the
    /// caller's installation the push reached, and whether they fetched it before; nil when
    /// the push is unknown, expired, or reached none of the caller's installations (one answer
    /// for every reason: it says nothing about other readers' pushes).
    public func secureText(id: Int, caller: String) throws(SessionError) -> SecureText? {
        do {
            guard let push = try ledger.securePush(id: id, now: context.clock.now()),
                let expression = try? TagExpression.parse(push.tags)
            else { return nil }
            guard
                let reached = try ledger.installations(owner: caller).first(where: { expression.matches(Set($0.tags)) })
            else { return nil }
            let text =
                reached.language.flatMap { push.texts[DeviceRules.propertySuffix($0)] } ?? push.texts["default"]
                ?? push.texts.values.first ?? ""
            let read = try ledger.markSecurePushRead(id: id, reader: caller)
            return SecureText(id: id, payload: text, read: read)
        } catch {
            throw .ledger(error)
        }
    }
}
