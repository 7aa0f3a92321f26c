import Foundation

/// HTTP validators remembered from the last fetch of a feed (conditional GET).
public struct ConditionalGetValidators: Codable, Sendable, Equatable {
    /// The `ETag` of the last full response.
    public var etag: String?
    /// The `Last-Modified` of the last full response.
    public var lastModified: String?

    /// Validators as the server gave them.
    public init(etag: String? = nil, lastModified: String? = nil) {
        self.etag = etag
        self.lastModified = lastModified
    }

    enum CodingKeys: String, CodingKey {
        case etag
        case lastModified = "last_modified"
    }
}
