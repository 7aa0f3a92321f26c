import Foundation
import NewsPushModel

/// Parses RSS 2.0, RSS 0.9x, RSS 1.0 (RDF) and Atom 1.0 documents into `ParsedFeed` values.
/// The dialect is detected from the document. Bytes are repaired first (`FeedBytes`), parsed
/// strictly with libxml2, and parsed again in recover mode only when they are not well-formed.
public enum FeedParser {
    /// Parses a feed document fetched from `url` (used to resolve relative links) with the
    /// HTTP `Content-Type` it came with, if any.
    /// `budget`: seconds the parse may take before it is stopped (`fetch.parse_budget`).
    public static func parse(_ data: Data, url: String?, contentType: String? = nil, budget: Double = defaultBudget)
        throws(FeedParseError) -> ParsedFeed
    {
        try parse(data, url: url, contentType: contentType, alwaysRepair: false, budget: budget)
    }

    /// The default parse budget: real feeds of several MB parse in a tenth of a second.
    public static let defaultBudget: Double = 10
    /// The most attributes a start tag may have (real feeds use fewer than twenty).
    static let maxAttributes = 256

    /// `alwaysRepair` runs the markup repair even when the bytes do not need it (tests compare).
    static func parse(
        _ data: Data, url: String?, contentType: String?, alwaysRepair: Bool,
        budget: Double = defaultBudget
    ) throws(FeedParseError) -> ParsedFeed {
        if data.isEmpty || data.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            throw .empty
        }
        let prepared = FeedBytes.prepare(data, httpContentType: contentType, alwaysRepair: alwaysRepair)
        guard prepared.withBytes({ $0.contains(UInt8(ascii: "<")) }) else {
            throw .notAFeed("no markup in the document")
        }
        let (flood, size) = prepared.withBytes { (ByteScan.attributeFlood($0, limit: maxAttributes), $0.count) }
        if flood < size {
            throw .hostile("an element at byte \(flood) has more than \(maxAttributes) attributes")
        }
        let deadline = ContinuousClock.now.advanced(by: .milliseconds(Int64(budget * 1000)))

        var reader = FeedDocumentReader(documentURL: url)
        let strict = XMLSAXParser(handler: reader, deadline: deadline)
        prepared.withBytes { strict.parse($0, url: url, recover: false) }
        if strict.outOfTime { throw .tooSlow(seconds: budget) }
        var problems = prepared.problems
        if !strict.wellFormed {
            reader = FeedDocumentReader(documentURL: url)
            let recovering = XMLSAXParser(handler: reader, deadline: deadline)
            // Recover mode drops every entity reference after the first error: it needs the
            // repaired bytes (all references numeric).
            prepared.withRepairedBytes { recovering.parse($0, url: url, recover: true) }
            if recovering.outOfTime { throw .tooSlow(seconds: budget) }
            let first = strict.errors.first ?? "unknown error"
            problems.append("not well-formed XML (\(first)); recovered what could be read")
        }
        reader.endOfInput()
        if let rejection = reader.rejection { throw .notAFeed(rejection) }
        guard let format = reader.format else {
            throw .unreadable(strict.errors.first ?? "no root element")
        }
        if reader.droppedOpenItem { problems.append("the document ends inside an item; that item was left out") }
        let channel = reader.channel
        var feed = ParsedFeed(
            format: format, title: channel.title, link: reader.feedLink, subtitle: channel.subtitle,
            language: channel.language, links: channel.links, items: reader.items, problems: problems)
        (feed.author, feed.authorEmail) = channel.author
        feed.publishedText = channel.published
        feed.updatedText = channel.updated
        feed.tags = channel.tags
        feed.id = channel.id
        feed.ttl = channel.ttl
        feed.itemElements = reader.itemElementsSeen
        return feed
    }
}
