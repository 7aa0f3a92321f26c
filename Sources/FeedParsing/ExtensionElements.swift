/// The namespaces both dialects carry: Dublin Core (`dc:`, `dcterms:`), Media RSS (`media:`),
/// `content:encoded` and an XHTML `<body>`.
enum ExtensionElements {
    /// A feed-level element.
    static func channelChild(_ name: XMLName, _ attributes: XMLAttributes, channel: inout ChannelDraft)
        -> ElementReading<ChannelField>
    {
        switch (name.kind, name.local) {
        case (.dc, "language"): return .text(.language, .plain)
        case (.dc, "subject"):
            channel.pendingTagScheme = attributes.value("domain")
            return .text(.category, .plain)
        case (.dc, "title"): return channel.title == nil ? .text(.title, .plain) : .ignored
        case (.dc, "creator"), (.dc, "author"): return .text(.author, .plain)
        case (.dcterms, "issued"): return .text(.published, .plain)
        case (.dc, "date"), (.dcterms, "modified"): return .text(.updated, .plain)
        default: return .ignored
        }
    }

    /// A child of an item.
    static func itemChild(_ name: XMLName, _ attributes: XMLAttributes, item: ItemDraft) -> ElementReading<ItemField> {
        switch (name.kind, name.local) {
        case (.dc, "date"): return .text(.dcDate, .plain)
        case (.dc, "creator"), (.dc, "author"): return .text(.dcCreator, .plain)
        case (.dc, "subject"): return .text(.category, .plain)
        case (.dc, "title"), (.media, "title"): return .text(.dcTitle, .plain)
        case (.dc, "description"): return item.description == nil ? .text(.description, .html) : .ignored
        case (.dcterms, "issued"): return .text(.published, .plain)
        case (.dcterms, "modified"): return .text(.updated, .plain)
        case (.dcterms, "created"): return .text(.created, .plain)
        case (.xhtml, "body"):
            item.item.contentType = "application/xhtml+xml"
            return .text(.content, .xhtml)
        case (.content, "encoded"):
            item.item.contentType = "text/html"
            return .text(.content, .html)
        case (.media, "category"):
            item.pendingTag = FeedTag(
                term: "", scheme: attributes.value("scheme") ?? "http://search.yahoo.com/mrss/category_schema",
                label: attributes.value("label"))
            return .text(.category, .plain)
        default: return .ignored
        }
    }

    /// `media:content` or `media:thumbnail` anywhere in an item (also inside `media:group`):
    /// an enclosure, and the item's image when it is the largest image so far. False for any
    /// other element.
    static func mediaObject(
        _ name: XMLName, _ attributes: XMLAttributes, item: ItemDraft, base: @autoclosure () -> String?
    ) -> Bool {
        guard name.kind == .media, name.local == "content" || name.local == "thumbnail" else { return false }
        guard let url = attributes.value("url"), let resolved = FeedURL.resolve(url, against: base()) else {
            return true
        }
        item.item.enclosures.append(resolved)
        let area = (Int(attributes.value("width") ?? "") ?? 0) * (Int(attributes.value("height") ?? "") ?? 0)
        if area > item.mediaImage?.area ?? -1,
            name.local == "thumbnail"
                || ImageSource.isImage(
                    medium: attributes.value("medium"), type: attributes.value("type"), url: resolved)
        {
            item.mediaImage = (resolved, area)
        }
        return true
    }
}
