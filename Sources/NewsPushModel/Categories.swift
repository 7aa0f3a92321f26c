import Foundation

/// The six tags newspush files items under; the raw value is the hub tag and the config name.
public enum NewsCategory: String, CaseIterable, Codable, Sendable, Comparable {
    case world = "World"
    case politics = "Politics"
    case business = "Business"
    case technology = "Technology"
    case science = "Science"
    case sports = "Sports"

    /// The order of SPEC §1 (World first, Sports last), which reports follow.
    public static func < (lhs: NewsCategory, rhs: NewsCategory) -> Bool {
        lhs.index < rhs.index
    }

    /// How many categories there are. Inlinable: the classifier's loops over the classes are
    /// unrolled across the module boundary (`allCases.count` is not known to other modules, which
    /// cost the bag-of-words model 10 % of its speed); a test checks it against `allCases`.
    @inlinable public static var count: Int { 6 }

    /// Its position among `allCases` (the classifier's class number).
    public var index: Int {
        switch self {
        case .world: return 0
        case .politics: return 1
        case .business: return 2
        case .technology: return 3
        case .science: return 4
        case .sports: return 5
        }
    }
}

/// How loudly an alert arrives: major alerts are time-sensitive with sound, minor ones arrive
/// silently at normal priority.
public enum Importance: String, Sendable, CaseIterable, Codable {
    case major, minor

    /// APNs priority: 10 delivers at once, 5 when the device sees fit.
    public var priority: String { self == .major ? "10" : "5" }
    /// iOS interruption level.
    public var interruptionLevel: String { self == .major ? "time-sensitive" : "active" }
}

/// How a category's pushes are sent.
public enum PushFormat: String, Sendable, CaseIterable {
    /// A template send with messageParam, title, category, url, source and id (SPEC §5).
    case template
    /// A template send with only `id` and `url`: the app fetches the story itself.
    case idOnly = "id-only"
    /// A native APNs payload for apple registrations without a template.
    case apple
    /// A native FCM v1 message for fcmv1 registrations without a template.
    case fcmv1
    /// A native WNS toast (`ToastText01` with the message) for wns registrations without a template.
    case wns
}
