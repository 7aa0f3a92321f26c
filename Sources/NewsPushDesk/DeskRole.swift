import NewsPushHTTP

/// What a desk user may do: look, or also decide and publish.
public enum DeskRole: String, Sendable, Codable, CaseIterable, UserRole {
    case viewer, editor
    /// `newspush desk add-user` writes the file.
    public static let fileKind = "desk"
}

/// The desk's users file.
public typealias DeskUsers = UsersFile<DeskRole>
