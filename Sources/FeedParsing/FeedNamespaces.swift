/// Namespace URIs feeds use.
enum FeedNamespace {
    static let atom = "http://www.w3.org/2005/Atom"
    static let atom03 = "http://purl.org/atom/ns#"
    static let rss10 = "http://purl.org/rss/1.0/"
    static let rss090 = "http://my.netscape.com/rdf/simple/0.9/"
    static let rdf: StaticString = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
    static let dc = "http://purl.org/dc/elements/1.1/"
    static let content = "http://purl.org/rss/1.0/modules/content/"
    static let dcterms = "http://purl.org/dc/terms/"
    static let xml: StaticString = "http://www.w3.org/XML/1998/namespace"
    static let userlandRSS2 = "http://backend.userland.com/rss2"
    static let userlandRSS = "http://backend.userland.com/rss"
    static let xhtml = "http://www.w3.org/1999/xhtml"
    static let harvardRSS = "http://blogs.law.harvard.edu/tech/rss"

    static func isRSS(_ ns: String) -> Bool {
        ns.isEmpty || ns == rss10 || ns == rss090 || ns.hasPrefix(userlandRSS) || ns == harvardRSS
    }
    static func isAtom(_ ns: String) -> Bool { ns == atom || ns == atom03 }
    static func isMedia(_ ns: String) -> Bool { ns.hasPrefix("http://search.yahoo.com/mrss") }
}

/// The namespaces the builders tell apart, so an element costs an enum comparison rather than
/// string comparisons of long URIs (`XMLSAXParser` works the kind out once per URI).
enum NamespaceKind: UInt8, Sendable {
    case none, rss10, rss090, otherRSS, atom, atom03, dc, dcterms, content, xhtml, media, rdf, xml, other

    init(_ uri: String) {
        switch uri {
        case "": self = .none
        case FeedNamespace.rss10: self = .rss10
        case FeedNamespace.rss090: self = .rss090
        case FeedNamespace.atom: self = .atom
        case FeedNamespace.atom03: self = .atom03
        case FeedNamespace.dc: self = .dc
        case FeedNamespace.dcterms: self = .dcterms
        case FeedNamespace.content: self = .content
        case FeedNamespace.xhtml: self = .xhtml
        case FeedNamespace.rdf.description: self = .rdf
        case FeedNamespace.xml.description: self = .xml
        default:
            if FeedNamespace.isMedia(uri) {
                self = .media
            } else if FeedNamespace.isRSS(uri) {
                self = .otherRSS
            } else {
                self = .other
            }
        }
    }

    /// No namespace or one of RSS's: RSS 1.0, 0.90, UserLand's and Harvard's.
    var isRSS: Bool { self == .none || self == .rss10 || self == .rss090 || self == .otherRSS }
    var isAtom: Bool { self == .atom || self == .atom03 }
}

/// An element name: the kind of its namespace and its local name.
/// The URI's text is not kept: the builders need only which of the namespaces feeds use it is,
/// worked out once per distinct URI. `namespace` tells URIs apart within one parse (libxml2
/// interns them), so a document's own unknown namespace can be read as RSS or Atom.
struct XMLName: Equatable, Hashable {
    var kind: NamespaceKind
    var local: String
    var namespace: UnsafeRawPointer? = nil
}
