import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// A small XML answer of the hub (a test send's `NotificationOutcome`, telemetry's
/// `NotificationDetails`) read whole into its elements: the client's one `XMLParser` delegate;
/// each answer's type reads its fields from the tree.
struct XMLAnswer: Sendable {
    /// The element's local name.
    var name: String
    /// Its text, trimmed of white space.
    var text: String
    /// Its child elements in order.
    var children: [XMLAnswer]

    /// The document's root element; nil when `data` is not well-formed XML.
    static func parse(_ data: Data) -> XMLAnswer? {
        let reader = Reader()
        let parser = XMLParser(data: data)
        parser.delegate = reader
        guard parser.parse() else { return nil }
        return reader.root
    }

    /// This element and every element inside it named `name`, in document order.
    func all(_ name: String) -> [XMLAnswer] {
        (self.name == name ? [self] : []) + children.flatMap { $0.all(name) }
    }

    /// The text of the first element named `name` (this one or inside it).
    func value(_ name: String) -> String? {
        all(name).first?.text
    }

    private final class Reader: NSObject, XMLParserDelegate {
        var root: XMLAnswer?
        private var open: [XMLAnswer] = []

        func parser(
            _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
            attributes: [String: String] = [:]
        ) {
            open.append(XMLAnswer(name: name, text: "", children: []))
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            if !open.isEmpty { open[open.count - 1].text += string }
        }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            guard var element = open.popLast() else { return }
            element.text = element.text.trimmingCharacters(in: .whitespacesAndNewlines)
            if open.isEmpty { root = element } else { open[open.count - 1].children.append(element) }
        }
    }
}
