import Foundation
import NewsPushModel

/// The feeds' WebSub subscriptions (SPEC §10), one per feed, shared by every watcher of the
/// ledger: the one that holds a feed asks its hub and renews, and whichever a hub calls answers
/// its verification and checks its distributions with the secret kept here. The secrets never
/// leave through `state export` or a report.
extension Ledger {
    private static let subscriptionColumns = "feed, token, hub, topic, secret, state, failures"

    /// The subscriptions of `feeds`, by feed URL.
    public func subscriptions(feeds: [String]) throws(LedgerError) -> [String: WebSubSubscription] {
        guard !feeds.isEmpty else { return [:] }
        return try reading {
            var found: [String: WebSubSubscription] = [:]
            for chunk in feeds.chunked(500) {
                let rows = try db.query(
                    "SELECT \(Self.subscriptionColumns) FROM websub_subscriptions WHERE feed IN (\(Self.marks(chunk.count)))",
                    chunk.map { .text($0) })
                for row in rows {
                    if let subscription = Self.subscription(row) { found[subscription.feed] = subscription }
                }
            }
            return found
        }
    }

    /// The subscription whose callback token is `token`.
    public func subscription(token: String) throws(LedgerError) -> WebSubSubscription? {
        try reading {
            try db.query(
                "SELECT \(Self.subscriptionColumns) FROM websub_subscriptions WHERE token = ?", [.text(token)]
            ).first.flatMap(Self.subscription)
        }
    }

    /// Changes `feed`'s subscription in one transaction: `change` gets the one kept (nil: none)
    /// and returns what to keep (`.some(nil)`: remove it) or nil to leave it. Returns what is
    /// kept afterwards.
    @discardableResult
    public func changeSubscription(
        feed: String, _ change: (WebSubSubscription?) -> WebSubSubscription??
    ) throws(LedgerError) -> WebSubSubscription? {
        try writing {
            let kept = try db.query(
                "SELECT \(Self.subscriptionColumns) FROM websub_subscriptions WHERE feed = ?", [.text(feed)]
            ).first.flatMap(Self.subscription)
            guard let next = change(kept) else { return kept }
            guard let next else {
                try db.run("DELETE FROM websub_subscriptions WHERE feed = ?", [.text(feed)])
                return nil
            }
            try db.run(
                """
                INSERT INTO websub_subscriptions (\(Self.subscriptionColumns)) VALUES (\(Self.marks(7)))
                ON CONFLICT (feed) DO UPDATE SET token = excluded.token, hub = excluded.hub, topic = excluded.topic,
                    secret = excluded.secret, state = excluded.state, failures = excluded.failures
                """, Self.values(next))
            return next
        }
    }

    /// Changes the subscription of callback token `token` in one transaction (a hub's
    /// verification, whichever watcher it reaches): `change` returns the new state, or nil to
    /// leave it; returns the changed subscription, or nil when none changed.
    public func changeSubscription(token: String, _ change: (WebSubSubscription) -> WebSubSubscription?)
        throws(LedgerError) -> WebSubSubscription?
    {
        try writing {
            guard
                let kept = try db.query(
                    "SELECT \(Self.subscriptionColumns) FROM websub_subscriptions WHERE token = ?", [.text(token)]
                ).first.flatMap(Self.subscription), let next = change(kept)
            else { return nil }
            try db.run(
                "UPDATE websub_subscriptions SET state = ?, failures = ? WHERE token = ?",
                [.text(Self.stateText(next.state)), .integer(Int64(next.failures)), .text(token)])
            return next
        }
    }

    /// The database's clock (the server's, for a ledger several hosts share).
    public func databaseNow() throws(LedgerError) -> Date {
        try reading { try db.now() }
    }

    private static func values(_ subscription: WebSubSubscription) -> [SQLValue] {
        [
            .text(subscription.feed), .text(subscription.token), .text(subscription.links.hub),
            .text(subscription.links.topic), .text(subscription.secret), .text(stateText(subscription.state)),
            .integer(Int64(subscription.failures)),
        ]
    }

    private static func stateText(_ state: WebSubSubscription.State) -> String {
        String(decoding: (try? JSONEncoder().encode(state)) ?? Data("\"wanted\"".utf8), as: UTF8.self)
    }

    /// A row as a subscription; a state that cannot be read is `wanted` (asked for again).
    private static func subscription(_ row: SQLRow) -> WebSubSubscription? {
        guard let feed = row.text(0), let token = row.text(1), let hub = row.text(2), let topic = row.text(3),
            let secret = row.text(4)
        else { return nil }
        var subscription = WebSubSubscription(
            feed: feed, links: WebSubLinks(hub: hub, topic: topic), secret: secret, token: token)
        subscription.state =
            (try? JSONDecoder().decode(WebSubSubscription.State.self, from: Data((row.text(5) ?? "").utf8))) ?? .wanted
        subscription.failures = row.int(6) ?? 0
        return subscription
    }
}
