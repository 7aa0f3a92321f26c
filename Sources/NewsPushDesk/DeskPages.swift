import FeedParsing
import Foundation
import NewsPushCore
import NewsPushLedger
import NewsPushModel
import NewsPushSessions

/// The desk's screens, rendered on the server. Every piece of feed or editor text goes through
/// `HTML`'s escaping interpolation.
enum DeskPages {
    /// The screens, in the order of the navigation.
    enum Screen: String, CaseIterable {
        case waiting = "/", next = "/next", sent = "/sent", reports = "/reports", publish = "/publish"

        var title: String {
            switch self {
            case .waiting: return "Waiting"
            case .next: return "Next run"
            case .sent: return "Sent"
            case .reports: return "Reports"
            case .publish: return "Publish"
            }
        }
    }

    /// A message carried to the next page after a form (good or bad news).
    struct Flash: Sendable {
        var text: String
        var bad: Bool
    }

    /// A whole page: header, navigation, the message of the last action, the screen.
    static func page(
        _ screen: Screen?, title: String, user: SignedIn?, flash: Flash?, live: Bool = false, body: HTML
    ) -> String {
        let nav: [HTML] = Screen.allCases.map { item in
            "<a href=\"\(text: item.rawValue)\"\((item == screen ? " class=\"on\" aria-current=\"page\"" : "") as HTML)>\(text: item.title)</a>"
        }
        let who: HTML =
            user.map { user in
                """
                <div class="who"><span>\(text: user.name) · \(text: user.role.rawValue)</span>\
                <form method="post" action="/logout" class="inline"><input type="hidden" name="csrf" value="\(text: user.csrf)">\
                <button type="submit">Sign out</button></form></div>
                """
            } ?? ""
        let message: HTML =
            flash.map { "<p class=\"flash\(($0.bad ? " bad" : "") as HTML)\" role=\"status\">\(text: $0.text)</p>" }
            ?? ""
        let header: HTML =
            user == nil
            ? "<header><strong>newspush desk</strong></header>"
            : """
            <header><strong>newspush desk</strong><nav>\(nav)</nav>\(who)</header>
            """
        let html: HTML = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="csrf-token" content="\(text: user?.csrf ?? "")">
            <title>\(text: title) · newspush desk</title>
            <style>\(HTML(stringLiteral: DeskAssets.style))</style>
            <script src="/desk.js" defer></script></head>
            <body data-live="\(live ? "1" : "0")">\(header)<main>\(message)\(body)</main></body></html>
            """
        return html.text
    }

    // MARK: Sign-in

    static func login(flash: Flash?) -> String {
        page(
            nil, title: "Sign in", user: nil, flash: flash,
            body: """
                <section class="card login"><h1>Sign in</h1>
                <form method="post" action="/login">
                <label for="user">User</label><input id="user" name="user" autocomplete="username" required autofocus>
                <label for="password">Password</label>
                <input id="password" name="password" type="password" autocomplete="current-password" required>
                <p><button type="submit">Sign in</button></p></form></section>
                """)
    }

    // MARK: Waiting

    static func waiting(
        _ held: [HeldPush], reach: [String: Int] = [:], config: NewsPushConfig, user: SignedIn, now: Date,
        flash: Flash?
    ) -> String {
        let names = Dictionary(config.feeds.map { ($0.url, $0.name ?? $0.url) }, uniquingKeysWith: { a, _ in a })
        let cards: [HTML] = held.map { push in
            heldCard(
                push, feeds: push.listedBy.map { names[$0] ?? $0 }, reach: reach[push.entry.tags],
                unreadable: push.entry.format == .idOnly
                    ? reach[SecurePush.tags(push.entry.tags, readers: false)] : nil, user: user, now: now)
        }
        let body: HTML = """
            <h1>Waiting for an editor (\(held.count))</h1>
            \((held.isEmpty ? "<p class=\"empty\">Nothing waits for an editor.</p>" : "") as HTML)\(cards)
            """
        return page(.waiting, title: "Waiting (\(held.count))", user: user, flash: flash, live: true, body: body)
    }

    /// "reaches N installations" of the app back-end's index (devices registered straight with
    /// the hub are not counted, and the words say so).
    /// `unreadable`: of those, how many cannot read a secure push (not signed in).
    static func reachLine(_ count: Int?, unreadable: Int? = nil) -> HTML {
        guard let count else { return "" }
        let cannot = unreadable.map { "; \($0) of them cannot read it (not signed in)" } ?? ""
        return
            "<p class=\"reach\">reaches \(text: String(count)) installations registered through newspush api\(text: cannot)</p>"
    }

    private static func heldCard(
        _ push: HeldPush, feeds: [String], reach: Int?, unreadable: Int?, user: SignedIn, now: Date
    ) -> HTML {
        let entry = push.entry
        let id = entry.id
        let left = entry.freshUntil.timeIntervalSince(now)
        let freshness: HTML =
            push.stale
            ? "<span class=\"gone\">no longer fresh: the next run expires it</span>"
            : "<span class=\"fresh\">fresh for \(text: duration(left))</span>"
        let also: HTML =
            feeds.isEmpty
            ? reachLine(reach, unreadable: unreadable)
            : "<p class=\"also\">Listed by: \(text: feeds.joined(separator: " · "))</p>\(reachLine(reach, unreadable: unreadable))"
        let link = entry.properties["url"]
        let decide: HTML
        if user.role == .editor && !push.stale {
            decide = """
                <div class="decide">
                <form method="post" action="/review/\(url: id)/approve" data-confirm="Send this alert to every reader of \(text: entry.tags)?">
                <input type="hidden" name="csrf" value="\(text: user.csrf)">
                <input type="hidden" name="original_title" value="\(text: entry.properties["title"] ?? "")">
                <label for="t-\(text: id)">Headline (edit to change the alert)</label>
                <input id="t-\(text: id)" name="title" value="\(text: entry.properties["title"] ?? "")">
                <label for="m-\(text: id)">Or the exact alert text</label>
                <textarea id="m-\(text: id)" name="message" placeholder="\(text: entry.properties["messageParam"] ?? "")"></textarea>
                <div class="row"><div><label for="i-\(text: id)">Importance</label><select id="i-\(text: id)" name="importance">
                <option value="">as held</option><option value="major">major</option><option value="minor">minor</option>
                </select></div><div><label>&nbsp;</label><button type="submit" name="approve" value="1">Approve and send</button></div></div>
                </form>
                <form method="post" action="/review/\(url: id)/reject">
                <input type="hidden" name="csrf" value="\(text: user.csrf)">
                <label for="r-\(text: id)">Reason (on the record)</label>
                <input id="r-\(text: id)" name="reason" required placeholder="why it must not go out">
                <p><button type="submit" class="danger">Reject</button></p></form></div>
                """
        } else {
            decide = user.role == .viewer ? "<p class=\"empty\">Viewers see the queue; editors decide.</p>" : ""
        }
        return """
            <article class="card\(push.stale ? " stale" : "")" id="held-\(text: id)">
            <div class="meta"><span class="cat">\(text: entry.category.rawValue)</span><span>held by \(text: push.rule)</span>\
            <span>waiting \(text: duration(Double(push.waitedSeconds)))</span>\(freshness)<span>id \(text: id)</span></div>
            <h2>\(text: entry.properties["title"] ?? entry.properties["messageParam"] ?? "")</h2>
            <p class="alert">\(text: entry.properties["messageParam"] ?? "")</p>
            \(link.map { "<p class=\"also\"><a href=\"\(href: $0)\" rel=\"noopener noreferrer\">\(text: $0)</a></p>" } ?? "")\
            \(also)\(decide)</article>
            """
    }

    // MARK: Next run

    static func nextRun(_ report: RunReport?, at: Date?, error: String?, user: SignedIn, now: Date, flash: Flash?)
        -> String
    {
        var body: HTML = "<h1>Next run</h1>"
        if let error { body = "\(body)<p class=\"flash bad\">The preview failed: \(text: error)</p>" }
        if let report, let at {
            let pushed = report.items.filter { $0.decision == .wouldPush }.count
            let held = report.items.filter { $0.decision == .wouldHold }.count
            let rows: [HTML] = report.items.map { item in
                """
                <tr><td>\(text: item.feed)</td>\
                <td>\(item.link.map { "<a href=\"\(href: $0)\" rel=\"noopener noreferrer\">\(text: item.title ?? $0)</a>" } ?? HTML.text(item.title))</td>\
                <td>\(text: item.category?.rawValue ?? "–") <span class="also">\(text: String(format: "%.0f %%", item.confidence * 100))</span></td>\
                <td class="st st-\(text: item.decision.rawValue)">\(text: item.decision.rawValue)</td><td>\(text: item.reason ?? "")</td></tr>
                """
            }
            let failed: [HTML] = report.feeds.filter { $0.error != nil }.map {
                "<li>\(text: $0.name): \(text: $0.error ?? "")</li>"
            }
            body = """
                \(body)<p class="meta"><span>checked the feeds \(text: duration(now.timeIntervalSince(at))) ago</span>\
                <span>\(report.items.count) items, \(pushed) would be pushed, \(held) held for an editor</span>\
                <a href="/next?fresh=1">Check the feeds now</a></p>
                \((failed.isEmpty ? "" : "<div class=\"flash bad\">Feeds that failed:<ul>\(failed)</ul></div>") as HTML)
                <div class="scroll"><table><thead><tr><th>Feed</th><th>Item</th><th>Category</th><th>Decision</th>\
                <th>Why</th></tr></thead><tbody>\(rows)</tbody></table></div>
                """
        }
        return page(.next, title: "Next run", user: user, flash: flash, body: body)
    }

    // MARK: Sent

    static func sent(
        _ pushes: [OutboxEntry], audit: [AuditRecord], filter: PushHistoryFilter, sinceText: String, user: SignedIn,
        flash: Flash?
    ) -> String {
        var editors: [String: String] = [:]
        for record in audit.reversed() where [.approved, .published, .corrected].contains(record.action) {
            if let id = record.entryID { editors[id] = record.editor }
        }
        let rows: [HTML] = pushes.map { entry in
            let cancel: HTML =
                entry.status == .scheduled && user.role == .editor && entry.notificationId != nil
                ? """
                <form method="post" action="/cancel/\(url: entry.notificationId ?? "")" class="inline">\
                <input type="hidden" name="csrf" value="\(text: user.csrf)"><button type="submit" class="quiet">Cancel</button></form>
                """ : ""
            let delivery: HTML =
                entry.notificationId.map { "<a href=\"/delivery/\(url: $0)\">delivery</a>" } ?? ""
            let correct: HTML =
                user.role == .editor && [.sent, .scheduled].contains(entry.status) && !entry.kind.isTrial
                ? "<a href=\"/publish?replace=\(url: entry.storyKey)\">correct</a>" : ""
            // Declared `HTML`: the literal is markup and only the error inside it is escaped.
            let failure: HTML = entry.error.map { "<div class=\"also\">\(text: $0)</div>" } ?? ""
            return """
                <tr><td>\(text: FeedDates.format(entry.createdAt))</td><td>\(text: entry.category.rawValue)</td>\
                <td>\(text: entry.properties["messageParam"] ?? "")<div class="also">\(text: entry.storyKey)</div></td>\
                <td class="st st-\(text: entry.status.rawValue)">\(text: entry.status.rawValue)\(failure)</td>\
                <td>\(text: Self.latency(entry))</td>\
                <td>\(text: entry.kind.rawValue)</td><td>\(text: editors[entry.id] ?? (entry.origin == .run ? "run" : "–"))</td>\
                <td>\(delivery) \(correct) \(cancel)</td></tr>
                """
        }
        let categories: [HTML] = NewsCategory.allCases.map {
            "<option\($0 == filter.category ? " selected" : "")>\(text: $0.rawValue)</option>"
        }
        let statuses: [HTML] = OutboxEntry.Status.allCases.map {
            "<option\($0 == filter.status ? " selected" : "")>\(text: $0.rawValue)</option>"
        }
        let windows: [HTML] = ["1h", "6h", "24h", "7d", "30d"].map {
            "<option\($0 == sinceText ? " selected" : "")>\(text: $0)</option>"
        }
        let body: HTML = """
            <h1>Sent and on record</h1>
            <form class="filters" method="get" action="/sent">
            <div><label for="f-c">Category</label><select id="f-c" name="category"><option value="">all</option>\(categories)</select></div>
            <div><label for="f-s">Status</label><select id="f-s" name="status"><option value="">all</option>\(statuses)</select></div>
            <div><label for="f-w">Since</label><select id="f-w" name="since"><option value="">any time</option>\(windows)</select></div>
            <div><button type="submit" class="quiet">Show</button></div></form>
            \((pushes.isEmpty ? "<p class=\"empty\">No pushes on record match.</p>" : "") as HTML)
            <div class="scroll"><table><thead><tr><th>Planned</th><th>Category</th><th>Alert</th><th>Status</th>\
            <th title="From the story first seen (the push planned) to the hub's accept">Latency</th><th>Kind</th><th>Editor</th><th></th></tr></thead><tbody>\(rows)</tbody></table></div>
            <p class="also">The newest \(filter.limit) at most.</p>
            """
        return page(.sent, title: "Sent", user: user, flash: flash, live: true, body: body)
    }

    /// How long the push took from its story first seen (planned) to the hub's accept: `1.4 s`,
    /// `3 min 5 s`; `–` until accepted (or for a push recorded before newspush kept the time).
    static func latency(_ entry: OutboxEntry) -> String {
        guard let accepted = entry.acceptedAt else { return "–" }
        let seconds = max(0, accepted.timeIntervalSince(entry.createdAt))
        if seconds < 60 { return String(format: "%.1f s", seconds) }
        let whole = Int(seconds.rounded())
        return whole < 3600 ? "\(whole / 60) min \(whole % 60) s" : "\(whole / 3600) h \(whole % 3600 / 60) min"
    }

    static func delivery(_ row: HubStatusRow?, id: String, user: SignedIn) -> String {
        let text = row?.text ?? "\(id)  the hub knows nothing of it"
        let body: HTML = "<h1>Delivery of \(text: id)</h1><pre>\(text: text)</pre>"
        return page(.sent, title: "Delivery", user: user, flash: nil, body: "\(body)<p><a href=\"/sent\">Back</a></p>")
    }

    // MARK: Publish

    /// The publish form, filled with `fields`, and the alert as a phone shows it when previewed.
    static func publish(
        fields: [String: String], preview: PublishOutput?, reach: Int? = nil, config: NewsPushConfig, user: SignedIn,
        now: Date, flash: Flash?
    ) -> String {
        let chosen = fields["category"] ?? ""
        let categories: [HTML] = NewsCategory.allCases.map {
            "<option\($0.rawValue == chosen ? " selected" : "")>\(text: $0.rawValue)</option>"
        }
        let importance = fields["importance"] ?? ""
        let importances: [HTML] = ["", "major", "minor"].map {
            "<option value=\"\(text: $0)\"\($0 == importance ? " selected" : "")>\(text: $0.isEmpty ? "the category's" : $0)</option>"
        }
        let form: HTML =
            user.role == .editor
            ? """
            <form method="post" action="/publish" class="card" data-confirm="Send this alert to every reader?">
            <input type="hidden" name="csrf" value="\(text: user.csrf)">
            <div class="row"><div><label for="p-c">Category</label><select id="p-c" name="category">\
            <option value="">(the corrected story's)</option>\(categories)</select></div>
            <div><label for="p-i">Importance</label><select id="p-i" name="importance">\(importances)</select></div>
            <div><label for="p-l">Language</label><input id="p-l" name="language" value="\(text: fields["language"] ?? "en")"></div></div>
            <label for="p-t">Headline (the category's message is made from it)</label>
            <input id="p-t" name="title" value="\(text: fields["title"] ?? "")">
            <label for="p-m">Or the exact alert text</label><textarea id="p-m" name="message">\(text: fields["message"] ?? "")</textarea>
            <label for="p-u">Story URL</label><input id="p-u" name="url" type="url" value="\(text: fields["url"] ?? "")">
            <div class="row"><div><label for="p-a">Send at (2026-11-24T18:00:00Z or +2h; empty: now)</label>\
            <input id="p-a" name="at" value="\(text: fields["at"] ?? "")"></div>
            <div><label for="p-r">Correct the story with key</label><input id="p-r" name="replace" value="\(text: fields["replace"] ?? "")"></div>
            <div><label for="p-g">Tags instead of the category's (a trial only when they reach none of its readers)</label><input id="p-g" name="tags" value="\(text: fields["tags"] ?? "")"></div>
            <div><label for="p-w">To one reader (their user name; a real push to their devices only)</label><input id="p-w" name="user" value="\(text: fields["user"] ?? "")"></div></div>
            <label><input type="checkbox" name="force" value="1"\(fields["force"] == "1" ? " checked" : "")> \
            Send even if this story was pushed before (a deliberate repeat)</label>
            <p class="row"><button type="submit" name="action" value="preview" class="quiet">Preview</button>\
            <button type="submit" name="action" value="send">Send</button></p></form>
            """ : "<p class=\"empty\">Viewers cannot publish.</p>"
        let phone: HTML = preview.map { phonePreview($0, hub: config.hub.name, reach: reach, now: now) } ?? ""
        let body: HTML = "<h1>Publish an alert</h1><div class=\"grid\"><div>\(form)</div><div>\(phone)</div></div>"
        return page(.publish, title: "Publish", user: user, flash: flash, body: body)
    }

    private static func phonePreview(_ output: PublishOutput, hub: String, reach: Int?, now: Date) -> HTML {
        let text = output.properties["messageParam"] ?? ""
        let clock = DateFormatter.localizedString(from: now, dateStyle: .none, timeStyle: .short)
        let refusal: HTML = output.refusal.map { "<p class=\"flash bad\">\(text: $0)</p>" } ?? ""
        let notes: [HTML] = output.notes.map { "<p class=\"flash\">\(text: $0)</p>" }
        return """
            <section aria-label="Alert preview"><h2>As a phone shows it</h2>\(refusal)\(notes)
            <div class="phone"><div class="clock">\(text: clock)</div><div class="note" id="phone-alert">\
            <div class="app"><span>\(text: hub)</span><span>now</span></div><div class="text">\(text: text)</div></div></div>
            <p class="meta"><span>to \(text: output.tags)</span><span>\(text: output.kind)</span>\
            <span>\(text: output.properties["importance"] ?? "")</span></p>\(reachLine(reach))</section>
            """
    }

    // MARK: Errors

    /// The page of a request the desk could not answer, saying why as the command line does.
    static func failure(_ text: String, user: SignedIn?) -> String {
        page(
            nil, title: "Cannot answer", user: user, flash: Flash(text: text, bad: true), body: "<h1>Cannot answer</h1>"
        )
    }

    static func forbidden(_ text: String, user: SignedIn?) -> String {
        page(nil, title: "Not allowed", user: user, flash: Flash(text: text, bad: true), body: "<h1>Not allowed</h1>")
    }

    /// "2 h 5 min", "12 min", "40 s".
    static func duration(_ seconds: Double) -> String {
        let s = Int(max(0, seconds).rounded())
        if s >= 3600 { return "\(s / 3600) h \(s % 3600 / 60) min" }
        if s >= 60 { return "\(s / 60) min" }
        return "\(s) s"
    }
}
