import Foundation
import NewsPushModel
import NewsPushSessions
import NotificationHubs

/// A document a route answers with. Its JSON is the encoder's (sorted keys, nothing after the
/// document) unless the type writes its own for speed (`InstallationAnswer`).
protocol ApiAnswer: Encodable {
    /// The document, byte for byte.
    var json: String { get }
}

extension ApiAnswer {
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
/// topics it ignored. Written by hand, as the installation's own JSON is: `JSONEncoder` was a
/// twelfth of the whole answer's cost on the registration path (docs/benchmarks.md).
struct InstallationAnswer: ApiAnswer {
    var installationId: String
    var tags: [String]
    var ignored: [String]

    var json: String {
        let list = { (texts: [String]) in "[" + texts.map(HubInstallation.quoted).joined(separator: ",") + "]" }
        return #"{"ignored":"# + list(ignored) + #","installationId":"# + HubInstallation.quoted(installationId)
            + #","tags":"# + list(tags) + "}"
    }
}

/// The tutorials' registration id: a JSON string.
extension String: ApiAnswer {}

/// A secure push's text, for its reader.
extension SecureText: ApiAnswer {}
