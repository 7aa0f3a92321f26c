import Foundation

/// What an app reports of an alert (`NewsPushClient.report`).
public enum AlertEvent: String, Sendable, CaseIterable {
    /// The notification reached the device (the Notification Service Extension ran).
    case received
    /// The reader tapped it (counts as received too).
    case opened
}

/// The push service a device's handle belongs to.
public enum PushPlatform: String, Sendable, CaseIterable {
    /// Apple Push Notification service: the handle is the device token (`Data`, sent as hex).
    case apns
    /// Firebase Cloud Messaging (HTTP v1): the handle is the FCM registration token.
    case fcmv1
    /// Windows Push Notification Services: the handle is the channel's `https` URI.
    case wns
}

/// How the app's reader signs in, as the app's own sign-in knows it.
public enum NewsPushCredential: Sendable, Equatable {
    /// A user of the newsroom's `api.users` file.
    case basic(user: String, password: String)
    /// A JWT of the newsroom's identity provider (`api.jwt`).
    case bearer(String)

    var header: String {
        switch self {
        case .basic(let user, let password):
            "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
        case .bearer(let token): "Bearer " + token
        }
    }
}

/// Why the identity closure is asked.
public enum IdentityRequest: Sendable, Equatable {
    /// Before a request: the credential the app holds (nil: the reader is anonymous).
    case current
    /// After the back-end answered 401 to the one just given: a fresh one (a refreshed token),
    /// asked once per request.
    case refresh
}

/// Where the app keeps the installation id between launches (the Keychain, `UserDefaults`, a
/// file): newspush creates the id once and reuses it at every launch.
public protocol InstallationIdStore: Sendable {
    /// The id kept, if any.
    func load() -> String?
    /// Keeps `id` (nil: forgets it).
    func save(_ id: String?)
}

/// An id kept in `UserDefaults` under one key.
public struct UserDefaultsIdStore: InstallationIdStore, @unchecked Sendable {
    private let defaults: UserDefaults
    private let key: String

    /// The id under `key` of `defaults`.
    public init(_ defaults: UserDefaults = .standard, key: String = "newspush.installationId") {
        self.defaults = defaults
        self.key = key
    }

    /// The id kept, if any.
    public func load() -> String? { defaults.string(forKey: key) }

    /// Keeps `id` (nil: forgets it).
    public func save(_ id: String?) { defaults.set(id, forKey: key) }
}

/// What the back-end registered.
public struct Registration: Sendable, Equatable, Decodable {
    /// The installation's id (kept by the store).
    public var installationId: String
    /// The tags it carries: the topics given, the reader's tag when signed in.
    public var tags: [String]
    /// Topics asked for and not given (not offered by the newsroom, or over its limit).
    public var ignored: [String]
}

/// How the kit retries a busy back-end (429, 503): never sooner than its `Retry-After`,
/// otherwise after an exponential backoff with jitter; it gives up after `attempts` tries or
/// when the back-end asks for a wait longer than `maximumWait`.
public struct RetryPolicy: Sendable, Equatable {
    /// Tries in all, the first included.
    public var attempts: Int
    /// The first backoff when the answer gives no `Retry-After`; doubled each time.
    public var initialBackoff: Duration
    /// The longest wait the kit accepts; a longer `Retry-After` ends the retries.
    public var maximumWait: Duration

    /// A policy of `attempts` tries.
    public init(attempts: Int = 4, initialBackoff: Duration = .milliseconds(500), maximumWait: Duration = .seconds(30))
    {
        self.attempts = max(1, attempts)
        self.initialBackoff = initialBackoff
        self.maximumWait = maximumWait
    }

    /// Four tries, 0.5 s doubling, at most 30 s a wait.
    public static let standard = RetryPolicy()
}

/// What went wrong, in words an app's log can carry.
public enum NewsPushError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The handle is not of its platform's form; nothing was sent.
    case badHandle(String)
    /// The credential was refused, and so was the refreshed one.
    case unauthorized(String)
    /// Still busy after the retries (or it asked for a longer wait than the policy allows).
    case busy(retryAfter: Duration?)
    /// The back-end refused the request (status and its `error`).
    case refused(status: Int, message: String)
    /// No answer (a network error).
    case unreachable(String)

    /// What went wrong, for a log.
    public var description: String {
        switch self {
        case .badHandle(let why): "not a push handle: \(why)"
        case .unauthorized(let why): "sign-in refused: \(why)"
        case .busy(let wait): "the back-end is busy" + (wait.map { "; it asks to wait \($0)" } ?? "")
        case .refused(let status, let message): "refused (\(status)): \(message)"
        case .unreachable(let why): "the back-end cannot be reached: \(why)"
        }
    }
}
