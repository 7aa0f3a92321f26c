/// RSS 0.9x, 1.0 and 2.0 elements: no namespace, RSS 1.0's and 0.90's, UserLand's and
/// Harvard's, and a document's own unknown default namespace on an `<rss>` root.
enum RSSBuilder {
    /// A child of `<channel>`.
    static func channelChild(_ name: XMLName, _ attributes: XMLAttributes, channel: inout ChannelDraft)
        -> ElementReading<ChannelField>
    {
        switch name.local {
        case "title": return .text(.title, TextKind.declared(by: attributes, atom: false))
        case "description": return .text(.subtitle, .html)
        case "subtitle", "tagline": return .text(.subtitle, TextKind.declared(by: attributes, atom: false))
        case "language": return .text(.language, .plain)
        case "category":
            channel.pendingTagScheme = attributes.value("domain")
            return .text(.category, .plain)
        case "author": return .text(.author, .plain)
        case "managingEditor": return channel.author == (nil, nil) ? .text(.author, .plain) : .ignored
        case "pubDate": return .text(.published, .plain)
        case "lastBuildDate": return .text(.updated, .plain)
        case "link": return .text(.link, .plain)
        case "ttl": return .text(.ttl, .plain)
        default: return .ignored
        }
    }

    /// A child of `<item>`.
    static func itemChild(
        _ name: XMLName, _ attributes: XMLAttributes, item: ItemDraft, base: @autoclosure () -> String?
    ) -> ElementReading<ItemField> {
        switch name.local {
        case "title": return .text(.title, .maybeHTML)
        case "link":
            // `<link href="…"/>` written Atom-style without Atom's namespace: feedparser reads
            // the href as the item's link.
            if let href = attributes.value("href")?.trimmedASCIIWhitespace(), !href.isEmpty {
                if attributes.value("rel").map({ $0 == "alternate" }) ?? true, item.rssLink?.isEmpty ?? true {
                    item.rssLink = href
                }
                return .ignored
            }
            return .text(.link, .plain)
        case "description": return .text(.description, .html)
        case "guid":
            item.item.guidIsPermaLink = attributes.value("isPermaLink").map { $0.lowercased() != "false" } ?? true
            return .text(.guid, .plain)
        case "pubDate": return .text(.pubDate, .plain)
        case "author": return .text(.author, .plain)
        case "summary":
            if item.description == nil { item.summaryBeforeDescription = true }
            return .text(.rssSummary, .html)
        case "fullitem", "body":
            item.item.contentType = "text/html"
            return .text(.content, .html)
        case "category":
            item.pendingTag = FeedTag(term: "", scheme: attributes.value("domain"), label: nil)
            return .text(.category, .plain)
        case "enclosure":
            if let url = attributes.value("url")?.trimmedASCIIWhitespace(), !url.isEmpty,
                let resolved = FeedURL.resolve(url, against: base())
            {
                item.item.enclosures.append(resolved)
                item.item.links.append(
                    FeedLink(
                        href: resolved, rel: "enclosure", type: attributes.value("type"),
                        length: attributes.value("length")))
            }
            return .ignored
        default: return .ignored
        }
    }
}

/// What a builder makes of an element.
enum ElementReading<Field> {
    /// Its text, written as `TextKind`, goes to `Field` when it closes.
    case text(Field, TextKind)
    /// An Atom person construct: its `name` and `email` children follow.
    case person
    /// Nothing more to read (what it said was in its attributes, or it means nothing here).
    case ignored
}
