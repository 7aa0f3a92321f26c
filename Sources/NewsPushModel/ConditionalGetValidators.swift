import Foundation

/// HTTP validators remembered from the last fetch of a feed (conditional GET).
public struct ConditionalGetValidators: Codable, Sendable, Equatable {
    public var etag: String?
    public var lastModified: String?

    public init(etag: String? = nil, lastModified: String? = nil) {
        self.etag = etag
        self.lastModified = lastModified
    }

    enum CodingKeys: String, CodingKey {
        case etag
        case lastModified = "last_modified"
    }
}
