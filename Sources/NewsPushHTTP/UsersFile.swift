import Foundation
import HummingbirdBcrypt
import Yams

/// A role of a users file: its values, and which command's file it is (`desk`, `api`).
public protocol UserRole: RawRepresentable<String>, Sendable, Codable, Equatable, CaseIterable {
    /// The command that manages the file (`newspush <kind> add-user`).
    static var fileKind: String { get }
}

/// Why the users file cannot be used or changed.
public enum UsersFileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file exists but is not a users file.
    case unreadable(path: String, reason: String)
    /// The file cannot be written.
    case cannotWrite(path: String, reason: String)
    /// A user name the desk cannot take.
    case badName(String)
    /// A password the desk will not store.
    case badPassword(String)

    /// What went wrong, naming the file or the value.
    public var description: String {
        switch self {
        case .unreadable(let path, let reason): return "\(path): \(reason)"
        case .cannotWrite(let path, let reason): return "cannot write \(path): \(reason)"
        case .badName(let name):
            return "'\(name)' cannot be a user's name: use 1 to 64 letters, digits, '.', '_', '-' or '@'"
        case .badPassword(let reason): return reason
        }
    }
}

/// A users file (`desk.users`, `api.users`): each user's role and bcrypt hash, never a password.
///
///     users:
///       alice: {role: editor, password: "$2b$11$…"}
public struct UsersFile<Role: UserRole>: Sendable {
    /// One user.
    public struct User: Sendable, Codable, Equatable {
        /// What the user may do.
        public var role: Role
        /// The bcrypt hash of the password.
        public var password: String
    }

    /// The file as written.
    private struct Contents: Codable { var users: [String: User]? }

    /// The file's path.
    public var path: String
    /// Users by name.
    public var users: [String: User]

    /// bcrypt's work factor: about 0.1 s a check on a server core; the desk checks only at
    /// sign-in, the API once per credential and users file (`ApiCredentials`).
    public static var cost: UInt8 { 11 }
    /// Checked against when the name is unknown, so a wrong name takes as long as a wrong password.
    private static var decoy: String { decoyHash }

    /// The users in the file at `path`; none when there is no file yet.
    public static func load(path: String) throws(UsersFileError) -> UsersFile {
        guard let data = FileManager.default.contents(atPath: path) else {
            if FileManager.default.fileExists(atPath: path) {
                throw .unreadable(path: path, reason: "cannot be read (permissions?)")
            }
            return UsersFile(path: path, users: [:])
        }
        do {
            let file = try YAMLDecoder().decode(Contents.self, from: data)
            let users = file.users ?? [:]
            for (name, user) in users where !user.password.hasPrefix("$2") {
                throw UsersFileError.unreadable(
                    path: path,
                    reason: "user \(name)'s password is not a bcrypt hash (use newspush \(Role.fileKind) add-user)")
            }
            return UsersFile(path: path, users: users)
        } catch let error as UsersFileError {
            throw error
        } catch {
            throw .unreadable(path: path, reason: "not a \(Role.fileKind) users file (\(error))")
        }
    }

    /// Adds `name` (or replaces its role and password) and writes the file, mode 0600.
    public mutating func set(_ name: String, role: Role, password: String) throws(UsersFileError) {
        guard Self.isValidName(name) else { throw .badName(name) }
        guard password.count >= 8 else { throw .badPassword("the password needs at least 8 characters") }
        // bcrypt reads at most 72 bytes: a longer password would be checked by its start only.
        guard password.utf8.count <= 72 else { throw .badPassword("the password may have at most 72 bytes") }
        // bcrypt stops at a NUL: the rest would never be checked.
        guard !password.utf8.contains(0) else { throw .badPassword("the password may not hold a NUL byte") }
        users[name] = User(role: role, password: Bcrypt.hash(password, cost: Self.cost))
        try write()
    }

    /// The role of `name` when `password` is theirs; nil otherwise (a wrong name takes as long).
    public func check(_ name: String, password: String) -> Role? {
        guard let user = users[name] else {
            _ = Bcrypt.verify(password, hash: Self.decoy)
            return nil
        }
        return Bcrypt.verify(password, hash: user.password) ? user.role : nil
    }

    /// What a sign-in came to.
    public enum SignIn: Sendable {
        case signedIn(User)
        /// A wrong password, or no such user (`knownName` says which: only a known name may be
        /// logged, as a password typed into the name field must never be).
        case refused(knownName: Bool)
        /// The users file cannot be read: nobody can sign in.
        case unreadable(UsersFileError)
    }

    /// Checks `name` and `password` against the file at `path`, read anew so `add-user` needs
    /// no restart.
    public static func signIn(path: String, name: String, password: String) -> SignIn {
        do {
            let users = try load(path: path)
            guard users.check(name, password: password) != nil, let user = users.users[name] else {
                return .refused(knownName: users.users[name] != nil)
            }
            return .signedIn(user)
        } catch {
            return .unreadable(error)
        }
    }

    /// 1 to 64 letters, digits, `.`, `_`, `-` or `@`.
    static func isValidName(_ name: String) -> Bool {
        (1...64).contains(name.count)
            && name.unicodeScalars.allSatisfy {
                ($0.isASCII && CharacterSet.alphanumerics.contains($0)) || "._-@".unicodeScalars.contains($0)
            }
    }

    /// Writes the file through a new file renamed over it: created 0600, never half written.
    private func write() throws(UsersFileError) {
        let kind = Role.fileKind
        var text =
            "# newspush \(kind) users: roles and bcrypt hashes (newspush \(kind) add-user NAME --role ROLE)\nusers:\n"
        for name in users.keys.sorted() {
            guard let user = users[name] else { continue }
            text += "  \"\(name)\": {role: \(user.role.rawValue), password: \"\(user.password)\"}\n"
        }
        let temporary = path + ".new"
        let created = FileManager.default.createFile(
            atPath: temporary, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600])
        guard created, rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw .cannotWrite(path: path, reason: reason)
        }
    }
}

/// The users file as it is now, read again whenever it changed on disk (its inode, size or
/// modification time), so every request is judged by the file's current word: a user removed,
/// demoted or given a new password loses what the old session allowed at the next request.
public actor CurrentUsersFile<Role: UserRole> {
    /// The users file.
    public let path: String
    private var cached: (stamp: [Int], users: UsersFile<Role>)?

    /// The file at `path`.
    public init(path: String) {
        self.path = path
    }

    /// The users; nil when the file cannot be read (then no session can be trusted).
    public func current() -> UsersFile<Role>? {
        current(stamped: ()).users
    }

    /// The users, and the stamp of the file they were read from.
    public func current(stamped: Void) -> (users: UsersFile<Role>?, stamp: [Int]) {
        var info = stat()
        guard stat(path, &info) == 0 else { return (nil, []) }
        let stamp = [
            Int(info.st_ino), Int(info.st_size), Int(info.st_mtim.tv_sec), Int(info.st_mtim.tv_nsec),
            Int(info.st_ctim.tv_nsec),
        ]
        if let cached, cached.stamp == stamp { return (cached.users, stamp) }
        guard let users = try? UsersFile<Role>.load(path: path) else {
            cached = nil
            return (nil, stamp)
        }
        cached = (stamp, users)
        return (users, stamp)
    }
}

/// One decoy hash for every users file (a generic type has no stored statics).
private let decoyHash = Bcrypt.hash("newspush decoy password", cost: 11)
