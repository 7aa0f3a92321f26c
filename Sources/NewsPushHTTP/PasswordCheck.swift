import Crypto
import Foundation
import Synchronization

/// `Authorization: Basic` as RFC 7617 writes it: base64 of `name:password` (UTF-8).
public enum BasicCredential {
    /// The name and password of a Basic header's credential (what follows `Basic `); nil when
    /// it is not base64 of `name:password`.
    public static func parse(_ credential: some StringProtocol) -> (name: String, password: String)? {
        guard let data = Data(base64Encoded: credential.trimmingCharacters(in: .whitespaces)),
            let text = String(data: data, encoding: .utf8), let colon = text.firstIndex(of: ":")
        else { return nil }
        return (String(text[..<colon]), String(text[text.index(after: colon)...]))
    }

    /// The scheme and credential of an `Authorization` header (`Basic abc=` → (`basic`, `abc=`));
    /// nil when it has no space.
    public static func split(_ header: String) -> (scheme: String, credential: String)? {
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2 else { return nil }
        return (parts[0].lowercased(), String(parts[1]).trimmingCharacters(in: .whitespaces))
    }
}

/// Where the instances of a front end remember the credentials they found good, beyond one
/// process (the app back-end: the ledger): a keyed digest of each, never the password, so after a
/// restart, or at another instance, a reader's first request needs no bcrypt check. The key is
/// not stored beside the digests (the back-end derives it from the hub's key): a copy of the
/// ledger and the users file together cannot check guesses faster than bcrypt does.
public protocol SharedCredentialMemory: Sendable {
    /// The digest of `name`'s `password` checked against their bcrypt `hash` (a new password
    /// or user makes another digest: an old one never matches).
    func digest(name: String, password: String, hash: String) -> String
    /// Whether `digest` was found good and is not too old.
    func recalls(_ digest: String) async -> Bool
    /// Remembers `digest`, found good for `name`, for the other instances and later starts.
    func keeps(_ digest: String, name: String) async
}

/// The one check of a name and password against a users file, for every front end that takes
/// them (the app back-end's HTTP Basic, the watcher's ping):
///
/// - bcrypt runs on threads of its own (two, or one), at most `maxWaiting` credentials wait for
///   them (past that: `busy`, at once), so a flood of wrong passwords never queues on the
///   threads that do ledger and hub work; requests with a credential already being checked wait
///   for that one check;
/// - failures are counted per name and network (`perNetwork` in a window) and per name from
///   any network (`perName`, higher): one guesser is stopped on their network without locking
///   the reader out of the networks a phone roams to, and many guessers are stopped together;
///   only names of the file are counted, so made-up names fill nothing;
/// - a credential found good is remembered (a keyed digest of it, with a key of this process,
///   never the password) while the user's entry in the file is unchanged (adding another user
///   forgets nothing), and in the `shared` memory when there is one: bcrypt runs once per
///   credential, and a locked-out name is still let in from a network it was used from before;
/// - a password holding NUL or longer than 72 bytes never matches (bcrypt would match it by its
///   start; `add-user` never stores one).
public final class PasswordCheck<Role: UserRole>: Sendable {
    /// How many failures stop a name.
    public struct Limits: Sendable, Equatable {
        /// Failures of one name from one network in `window` (the network's guesser is stopped).
        public var perNetwork: Int
        /// Failures of one name from any networks in `window` (many guessers are stopped; the
        /// name is then taken only from networks its credential was used from).
        public var perName: Int
        /// Seconds failures are counted for.
        public var window: Double = 15 * 60

        /// `failures` per name and network, four times as many per name.
        public init(failures: Int) {
            perNetwork = failures
            perName = failures * 4
        }
    }

    /// What a check came to.
    public enum Outcome: Sendable, Equatable {
        /// The name and password are a user's, of this role.
        case signedIn(Role)
        /// A wrong name or password (or the users file cannot be read).
        case wrong
        /// Too many failures for this name (from this network, or from many): try again after.
        case tooMany(retryAfter: Int)
        /// Too many checks wait for bcrypt's threads: try again in a second.
        case busy
    }

    /// The users file, read again when it changes on disk.
    public let users: CurrentUsersFile<Role>
    let limits: Limits
    private let shared: (any SharedCredentialMemory)?
    private let cacheKey = SymmetricKey(size: .bits256)
    private let remembered = Mutex(Generations<Remembered>(capacity: 100_000))
    private let failures = Mutex(Generations<[Date]>(capacity: 50_000))
    /// The bcrypt checks under way, by credential: a request whose credential is being checked
    /// waits for that check instead of starting another.
    private let checking = Mutex<[String: Task<Role?, Never>]>([:])
    /// Credentials that may wait for bcrypt's threads at once.
    public static var maxWaiting: Int { 8 }
    private let bcryptThreads: BlockingThreads

    /// A credential found good: the bcrypt hash it was checked against (the user's entry then),
    /// and the networks it was used from (the last 8: a reader's phones).
    private struct Remembered {
        var hash: String
        var networks: [String]
    }

    /// Checks against the users file at `path` with `limits`, bcrypt on `threads` threads (at
    /// most that many cores ever go to checking passwords, however many guesses come), good
    /// credentials remembered in `shared` too when given.
    public init(
        usersPath path: String, limits: Limits, threads: Int = 2, shared: (any SharedCredentialMemory)? = nil
    ) {
        users = CurrentUsersFile(path: path)
        self.limits = limits
        self.shared = shared
        bcryptThreads = BlockingThreads(count: threads)
    }

    /// Whether `password` is `name`'s, asked from `network` at `now`.
    public func check(name: String, password: String, network: String, now: Date) async -> Outcome {
        guard let file = await users.current() else { return .wrong }
        let user = file.users[name]
        let key = Data(HMAC<SHA256>.authenticationCode(for: Data((name + ":" + password).utf8), using: cacheKey))
            .base64EncodedString()
        let locked = user != nil ? retryAfter(name, network: network, now: now) : nil
        if let user, let known = remembered.withLock({ $0.peek(key) }), known.hash == user.password,
            locked == nil || known.networks.contains(network)
        {
            if !known.networks.contains(network) { remember(key, network: network) }
            return .signedIn(user.role)
        }
        if let locked { return .tooMany(retryAfter: locked) }
        guard !password.utf8.contains(0), password.utf8.count <= 72 else {
            if user != nil { failed(name, network: network, now: now) }
            return .wrong
        }
        let digest = user.flatMap { user in shared?.digest(name: name, password: password, hash: user.password) }
        if let user, let digest, let shared, await shared.recalls(digest) {
            remembered.withLock { $0.put(key, Remembered(hash: user.password, networks: [network])) }
            return .signedIn(user.role)
        }
        guard let check = bcrypt(key, file: file, name: name, password: password) else { return .busy }
        guard let role = await check.value, let user else {
            if user != nil { failed(name, network: network, now: now) }
            return .wrong
        }
        let first = remembered.withLock { remembered in
            let first = remembered.peek(key)?.hash != user.password
            if first { remembered.put(key, Remembered(hash: user.password, networks: [network])) }
            return first
        }
        if first, let digest, let shared { await shared.keeps(digest, name: name) }
        return .signedIn(role)
    }

    /// The bcrypt check of a credential: the one under way, or a new one when fewer than
    /// `maxWaiting` are; nil when that many are.
    private func bcrypt(_ key: String, file: UsersFile<Role>, name: String, password: String) -> Task<Role?, Never>? {
        checking.withLock { checking in
            if let running = checking[key] { return running }
            guard checking.count < Self.maxWaiting else { return nil }
            let task = Task { [bcryptThreads, self] () -> Role? in
                let role = (try? await bcryptThreads.run { file.check(name, password: password) }) ?? nil
                _ = self.checking.withLock { $0.removeValue(forKey: key) }
                return role
            }
            checking[key] = task
            return task
        }
    }

    /// Adds `network` to the networks a good credential was used from (the last 8).
    private func remember(_ key: String, network: String) {
        remembered.withLock { remembered in
            guard var known = remembered.take(key) else { return }
            known.networks = Array((known.networks + [network]).suffix(8))
            remembered.put(key, known)
        }
    }

    /// Seconds until `name` may be tried again from `network`; nil when a try is allowed now.
    private func retryAfter(_ name: String, network: String, now: Date) -> Int? {
        let counts = [("n:" + name + "|" + network, limits.perNetwork), ("u:" + name, limits.perName)]
        let waits = counts.compactMap { key, limit -> Double? in
            let recent = failures.withLock { $0.peek(key) ?? [] }.filter { now.timeIntervalSince($0) < limits.window }
            guard recent.count >= limit, let oldest = recent.first else { return nil }
            return limits.window - now.timeIntervalSince(oldest)
        }
        return waits.max().map { max(1, Int($0.rounded(.up))) }
    }

    private func failed(_ name: String, network: String, now: Date) {
        let counts = [("n:" + name + "|" + network, limits.perNetwork), ("u:" + name, limits.perName)]
        failures.withLock { failures in
            for (key, limit) in counts {
                var recent = (failures.take(key) ?? []).filter { now.timeIntervalSince($0) < limits.window }
                recent.append(now)
                failures.put(key, Array(recent.suffix(limit)))
            }
        }
    }
}
