import Foundation

/// A JSON object body whose field names are matched whatever their case (the tutorials' ASP.NET
/// back-end bound `Platform` and `platform` alike): decoded by `JSONDecoder` with each name
/// mapped to the spelling of `fieldNames`, after `RequestBody.names` refused a name given twice.
protocol CaseInsensitiveBody: Decodable {
    /// The fields' names as the API spells them (what a problem names).
    static var fieldNames: [String] { get }
}

/// `PUT /api/installations/{id}`.
struct InstallationBody: CaseInsensitiveBody {
    static let fieldNames = ["platform", "pushChannel", "topics", "language"]
    var platform: String
    var pushChannel: String
    var topics: [String]?
    var language: String?
}

/// `POST /api/register` with the handle in its body (where no proxy logs it).
struct RegistrationIdBody: CaseInsensitiveBody {
    static let fieldNames = ["handle"]
    var handle: String?
}

/// The tutorials' `PUT /api/register/{id}` (their `DeviceRegistration`).
struct RegistrationBody: CaseInsensitiveBody {
    static let fieldNames = ["Platform", "Handle", "Tags"]
    var platform: String
    var handle: String?
    var tags: [String]?

    enum CodingKeys: String, CodingKey {
        case platform = "Platform"
        case handle = "Handle"
        case tags = "Tags"
    }
}

/// `POST /api/alerts/{alertId}/events` (SPEC §11).
struct AlertEventBody: CaseInsensitiveBody {
    static let fieldNames = ["installationId", "event"]
    var installationId: String
    var event: String
}

/// Reading a request's body as one of the API's types, with a 400's words for what is wrong.
enum RequestBody {
    /// What is wrong with a body, as the phone is told it.
    struct Problem: Error, Equatable {
        var message: String
    }

    /// `body` as `Body`: refused when empty, not JSON, not an object, with a name given twice
    /// or in two cases, a required field missing or null, or a field of the wrong type (in this
    /// order). One parse: the decoder's; the names are scanned only once the body is known to
    /// be an object.
    static func decode<Body: CaseInsensitiveBody>(_ type: Body.Type, from body: Data) throws(Problem) -> Body {
        guard !body.isEmpty else { throw Problem(message: "the body is empty: a JSON object is expected") }
        let spelled = Dictionary(Body.fieldNames.map { ($0.lowercased(), $0) }, uniquingKeysWith: { a, _ in a })
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .custom { path in
            let name = path.last?.stringValue ?? ""
            return FieldName(spelled[name.lowercased()] ?? name)
        }
        let decoded: Body
        do {
            decoded = try decoder.decode(Body.self, from: body)
        } catch let error as DecodingError {
            switch error {
            case .dataCorrupted(let context) where context.codingPath.isEmpty:
                throw Problem(message: "the body is not valid JSON")
            case .typeMismatch(_, let context) where context.codingPath.isEmpty:
                throw Problem(message: "the body must be a JSON object")
            default:
                try refuseRepeatedNames(body)
                throw Problem(message: said(error))
            }
        } catch {
            throw Problem(message: "the body cannot be read")
        }
        try refuseRepeatedNames(body)
        return decoded
    }

    /// Names are found whatever their case, so two that differ only in case (or one given twice,
    /// which the decoders keep one of) would leave the winner to chance: refused.
    private static func refuseRepeatedNames(_ body: Data) throws(Problem) {
        var seen: [String: String] = [:]
        for name in topLevelNames(body) {
            if let first = seen[name.lowercased()] {
                throw Problem(
                    message: first == name
                        ? "field '\(name)' is given twice" : "fields '\(first)' and '\(name)' differ only in case")
            }
            seen[name.lowercased()] = name
        }
    }

    /// A decoding error in the words of the field it is about.
    private static func said(_ error: DecodingError) -> String {
        switch error {
        case .keyNotFound(let key, _): return "field '\(key.stringValue)' is required"
        case .valueNotFound(_, let context):
            return "field '\(context.codingPath.first?.stringValue ?? "?")' is required"
        case .typeMismatch(let type, let context):
            let field = context.codingPath.first?.stringValue ?? "?"
            let arrayField = context.codingPath.count > 1 || type is [Any].Type || type is [String].Type
            return "field '\(field)' must be " + (arrayField ? "an array of strings" : "a string")
        case .dataCorrupted: return "the body is not valid JSON"
        @unknown default: return "the body cannot be read"
        }
    }

    /// The member names of a JSON object's top level, in order, repeats included, read from
    /// `body` already known to be a valid JSON object. Hand-written: neither JSONSerialization
    /// nor JSONDecoder reports a repeated name, and this is a walk over strings and depth.
    static func topLevelNames(_ body: Data) -> [String] {
        var names: [String] = []
        var depth = 0
        var index = body.startIndex
        var expectingName = false
        while index < body.endIndex {
            switch body[index] {
            case UInt8(ascii: "{"):
                depth += 1
                expectingName = depth == 1
            case UInt8(ascii: "["): depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"): depth -= 1
            case UInt8(ascii: ","): expectingName = depth == 1
            case UInt8(ascii: "\""):
                var end = body.index(after: index)
                while end < body.endIndex && body[end] != UInt8(ascii: "\"") {
                    end = body.index(end, offsetBy: body[end] == UInt8(ascii: "\\") ? 2 : 1)
                }
                let close = min(body.endIndex, end + 1)
                if expectingName, end <= body.endIndex, let name = jsonString(body[index..<close]) {
                    names.append(name)
                }
                expectingName = false
                index = end
            default: break
            }
            index = body.index(after: index)
        }
        return names
    }

    /// The JSON string `quoted` (quotes included): its bytes when it has no escape (the names of
    /// every body a client sends), else as JSONSerialization reads it.
    private static func jsonString(_ quoted: Data) -> String? {
        guard quoted.count >= 2, quoted.last == UInt8(ascii: "\"") else { return nil }
        let inner = quoted.dropFirst().dropLast()
        guard inner.contains(UInt8(ascii: "\\")) else { return String(decoding: inner, as: UTF8.self) }
        return try? JSONSerialization.jsonObject(with: Data(quoted), options: .fragmentsAllowed) as? String
    }

    /// The text of a message body: a JSON string, or (the tutorials' apps do not escape their
    /// quotes) the text between the outer quotes of one that is not valid JSON.
    static func messageText(_ body: Data) -> String? {
        let raw = String(decoding: body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if let text = (try? JSONSerialization.jsonObject(with: Data(raw.utf8), options: .fragmentsAllowed)) as? String {
            return text
        }
        guard raw.count >= 2, raw.hasPrefix("\""), raw.hasSuffix("\"") else { return nil }
        return String(raw.dropFirst().dropLast())
    }

    /// A field's name, as the decoder looks it up.
    private struct FieldName: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
