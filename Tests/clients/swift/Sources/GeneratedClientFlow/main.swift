// The app's flow through the client swift-openapi-generator made from the served document:
// every field is set through the generated types, so a field the document leaves out does not
// compile. Arguments: the back-end's URL, a user and password. Prints a JSON report.
import Foundation
import HTTPTypes
import OpenAPIRuntime
import OpenAPIURLSession

struct SignedIn: ClientMiddleware {
    let authorization: String

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        request.headerFields[.authorization] = authorization
        return try await next(request, body, baseURL)
    }
}

let arguments = CommandLine.arguments
guard arguments.count == 4, let server = URL(string: arguments[1]) else {
    fatalError("usage: GeneratedClientFlow URL USER PASSWORD")
}
let basic = "Basic " + Data("\(arguments[2]):\(arguments[3])".utf8).base64EncodedString()
let anonymous = Client(serverURL: server, transport: URLSessionTransport())
let reader = Client(serverURL: server, transport: URLSessionTransport(), middlewares: [SignedIn(authorization: basic)])
let token = "swift:APA91b" + String(repeating: "Q-r_s.9", count: 12)
var report: [String: Any] = [:]

// An anonymous phone with topics and a language.
let anonymousAnswer = try await anonymous.putInstallation(
    path: .init(id: "swift-anonymous"),
    body: .json(
        .init(platform: .fcmv1, pushChannel: token + "-a", topics: ["World", "Sports", "Gardening"], language: "fr")))
let registered = try anonymousAnswer.ok.body.json
report["anonymous"] = [
    "installationId": registered.installationId, "tags": registered.tags, "ignored": registered.ignored,
]

// A signed-in iPhone.
let signedInAnswer = try await reader.putInstallation(
    path: .init(id: "swift-signed-in"),
    body: .json(
        .init(platform: .apns, pushChannel: String(repeating: "5a", count: 32), topics: ["Politics"], language: "en")))
let signedIn = try signedInAnswer.ok.body.json
report["signedIn"] = ["installationId": signedIn.installationId, "tags": signedIn.tags]

// The tutorials' flow: ask for an id, then register under it.
let id = try await reader.registrationId(query: .init(handle: token + "-t")).ok.body.json
let put = try await reader.putRegistration(
    path: .init(id: id), body: .json(.init(Platform: .fcm, Handle: token + "-t", Tags: ["Business"])))
_ = try put.ok
report["tutorial"] = ["id": id]

// A secure push to the reader's own devices, and its text.
let sent = try await reader.notifyUser(body: .json("Your parcel is at the door")).ok.body.json
guard let secureId = sent.secureId else { fatalError("no secureId in \(sent)") }
let text = try await reader.secureText(path: .init(id: secureId)).ok.body.json
report["secure"] = ["secureId": secureId, "payload": text.Payload, "read": text.Read]

// Forget-me.
_ = try await reader.forgetMe().noContent
report["forgotten"] = true

let json = try JSONSerialization.data(withJSONObject: report, options: [.sortedKeys])
print(String(decoding: json, as: UTF8.self))
