import NewsPushHTTP

/// What an app user (`newspush api`, HTTP Basic) may do: register their devices, or also send
/// to users.
public enum ApiRole: String, Sendable, Codable, CaseIterable, UserRole {
    case reader, sender
    /// `newspush api add-user` writes the file.
    public static let fileKind = "api"
}

/// The app back-end's users file (`api.users`).
public typealias ApiUsers = UsersFile<ApiRole>
