/// What an app user (`newspush api`, HTTP Basic) may do: register their devices, or also send
/// to users (and ping the watcher). Here, not in the back-end: the watcher's listener checks
/// senders too, and front ends never import each other.
public enum ApiRole: String, Sendable, Codable, CaseIterable, UserRole {
    case reader, sender
    /// `newspush api add-user` writes the file.
    public static let fileKind = "api"
}

/// The app back-end's users file (`api.users`).
public typealias ApiUsers = UsersFile<ApiRole>
