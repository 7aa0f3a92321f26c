import Foundation

/// One installation in the ledger's index (SPEC §9): who owns it, its platform and tags, and a
/// digest of its push handle. The handle itself is never kept: the hub has it.
public struct InstallationRecord: Sendable, Equatable, Codable {
    /// The installation's id (the hub's too).
    public var id: String
    /// The user it belongs to; nil for an anonymous installation.
    public var owner: String?
    /// `apns`, `fcmv1` or `wns`.
    public var platform: String
    /// The tags it carries at the hub, in order.
    public var tags: [String]
    /// The language its texts are in, when the app said.
    public var language: String?
    /// SHA-256 of the push handle, hex (one handle, one installation).
    public var handleDigest: String
    /// When it was first registered.
    public var created: Date
    /// When it was last registered again (written at most once a day by a registration that
    /// changes nothing).
    public var refreshed: Date
    /// A digest of the template set it was written to the hub with (`api.templates` as they
    /// were then); nil for one written before the index kept it.
    public var templateDigest: String?

    /// An installation as the index keeps it.
    public init(
        id: String, owner: String?, platform: String, tags: [String], language: String?, handleDigest: String,
        created: Date, refreshed: Date, templateDigest: String? = nil
    ) {
        self.id = id
        self.owner = owner
        self.platform = platform
        self.tags = tags
        self.language = language
        self.handleDigest = handleDigest
        self.created = created
        self.refreshed = refreshed
        self.templateDigest = templateDigest
    }

    /// Whether `other` would put the same installation at the hub: the same handle, platform,
    /// tags, language, owner and template set (ids and times aside).
    public func isSameRegistration(as other: InstallationRecord) -> Bool {
        handleDigest == other.handleDigest && platform == other.platform && Set(tags) == Set(other.tags)
            && language == other.language && owner == other.owner && templateDigest == other.templateDigest
    }
}

/// How many installations of the index fall in each group (`devices count`).
public struct InstallationCounts: Sendable, Equatable, Codable {
    /// All of them.
    public var total: Int
    /// Signed-in users' (the rest are anonymous).
    public var signedIn: Int
    /// By platform.
    public var platforms: [String: Int]
    /// By tag, user tags left out (one per user says nothing about a topic).
    public var topics: [String: Int]
    /// Those still written with another template set than `api.templates` makes now (each is
    /// written again at its next registration, so a change reaches phones as they open).
    public var oldTemplates = 0

    /// Counts as read from the index.
    public init(total: Int, signedIn: Int, platforms: [String: Int], topics: [String: Int]) {
        self.total = total
        self.signedIn = signedIn
        self.platforms = platforms
        self.topics = topics
    }
}
