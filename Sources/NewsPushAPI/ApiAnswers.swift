import Foundation
import NewsPushSessions

/// A document a route answers with: the encoder's JSON of it (sorted keys, nothing after the
/// document).
protocol ApiAnswer: Encodable {}

extension ApiAnswer {
    /// The document, byte for byte.
    var json: String { JSONText.encode(self, pretty: false) }
}

/// `{"error": why}`.
struct ErrorAnswer: ApiAnswer {
    var error: String
}

/// `/healthz`: `ok` or `unavailable`, and why only to those who may know.
struct HealthAnswer: ApiAnswer {
    var status: String
    var error: String?
}

/// A message sent: its notification id (to a user) or its secure id (a secure push).
struct SentAnswer: ApiAnswer {
    var status = "sent"
    var notificationId: String?
    var secureId: Int?
}

/// `PUT /api/installations/{id}`: the installation and the tags newspush gave it, and the
/// topics it ignored. (It was written by hand for speed; through the encoder the registration
/// path measured the same, 0.49× against 0.50× direct, within the rounds' spread:
/// docs/benchmarks.md.)
struct InstallationAnswer: ApiAnswer {
    var installationId: String
    var tags: [String]
    var ignored: [String]
}

/// The tutorials' registration id: a JSON string.
extension String: ApiAnswer {}

/// A secure push's text, for its reader.
extension SecureText: ApiAnswer {}
