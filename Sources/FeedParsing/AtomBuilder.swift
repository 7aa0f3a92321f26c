/// Atom 1.0 and 0.3 elements (and no namespace in an Atom document).
enum AtomBuilder {
    /// A child of `<feed>`.
    static func feedChild(
        _ name: XMLName, _ attributes: XMLAttributes, channel: inout ChannelDraft, base: @autoclosure () -> String?
    ) -> ElementReading<ChannelField> {
        switch name.local {
        case "title": return .text(.title, TextKind.declared(by: attributes, atom: true))
        case "subtitle", "tagline": return .text(.subtitle, TextKind.declared(by: attributes, atom: true))
        case "description": return .text(.subtitle, .html)
        case "id": return .text(.id, .plain)
        case "author": return .person
        case "published": return .text(.published, .plain)
        case "updated": return .text(.updated, .plain)
        case "link":
            if let (link, alternate) = link(attributes, base: base()) {
                channel.atomLinks.append(alternate)
                channel.links.append(link)
            }
            return .ignored
        default: return .ignored
        }
    }

    /// A child of `<entry>`.
    static func entryChild(
        _ name: XMLName, _ attributes: XMLAttributes, item: ItemDraft, base: @autoclosure () -> String?
    ) -> ElementReading<ItemField> {
        switch name.local {
        case "title": return .text(.title, TextKind.declared(by: attributes, atom: true))
        case "summary": return .text(.atomSummary, TextKind.declared(by: attributes, atom: true))
        case "content":
            let type = (attributes.value("type") ?? "text").lowercased()
            item.item.contentType =
                ["html": "text/html", "xhtml": "application/xhtml+xml", "text": "text/plain"][type] ?? type
            return .text(.content, TextKind.declared(by: attributes, atom: true))
        case "id": return .text(.atomId, .plain)
        case "published", "issued": return .text(.published, .plain)
        case "updated", "modified": return .text(.updated, .plain)
        case "author":
            // Each <author> starts afresh; the first one is the item's author.
            if !item.authors.isEmpty {
                item.atomAuthorName = nil
                item.atomAuthorEmail = nil
            }
            return .person
        case "category":
            if let term = attributes.value("term") ?? attributes.value("label") {
                let clean = Mojibake.repaired(PlainText.collapse(term))
                if !clean.isEmpty {
                    item.item.categories.append(clean)
                    item.item.tags.append(
                        FeedTag(term: clean, scheme: attributes.value("scheme"), label: attributes.value("label")))
                }
            }
            return .ignored
        case "link":
            if let (link, alternate) = link(attributes, base: base()) {
                if alternate.rel == "enclosure" { item.item.enclosures.append(link.href) }
                item.atomLinks.append(alternate)
                item.item.links.append(link)
            }
            return .ignored
        default: return .ignored
        }
    }

    /// A child of a person construct (`author`): its name or e-mail.
    static func personChild(_ name: XMLName) -> PersonPart? {
        switch name.local {
        case "name": return .name
        case "email": return .email
        default: return nil
        }
    }

    enum PersonPart { case name, email }

    /// An Atom `<link>` with its `href` resolved; nil without one.
    private static func link(_ attributes: XMLAttributes, base: @autoclosure () -> String?) -> (
        FeedLink, AlternateLink
    )? {
        guard let href = attributes.value("href"),
            let resolved = FeedURL.resolve(href.trimmedASCIIWhitespace(), against: base())
        else { return nil }
        let rel = attributes.value("rel") ?? "alternate"
        let link = FeedLink(
            href: resolved, rel: rel, type: attributes.value("type"), length: attributes.value("length"),
            hreflang: attributes.value("hreflang"), title: attributes.value("title"))
        return (link, AlternateLink(rel: rel, type: attributes.value("type") ?? "", href: resolved))
    }
}
