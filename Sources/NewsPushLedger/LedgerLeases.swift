import Foundation
import NewsPushModel

/// The watchers' share of the feeds (SPEC §10): on a ledger several watchers use, each feed is
/// leased to one of them at a time. A watcher renews its leases while it lives; a lease of a
/// watcher that stopped renewing (killed, cut off) ends `lease` seconds after its last renewal,
/// and another watcher takes the feed. Each watcher holds about its share (the feeds divided by
/// the watchers alive), so a second watcher takes half the feeds from the first.
extension Ledger {
    /// Renews `holder`'s membership and leases for `lease` seconds from now on the database's
    /// clock (every host sharing the ledger counts on the same one), gives back what is over its
    /// share, takes free feeds of `feeds` (never leased, or whose lease ended) up to its share,
    /// and returns the feeds it holds. One transaction; a feed another watcher holds is never
    /// taken while its lease runs (the take is one conditional upsert per feed).
    public func leaseFeeds(_ feeds: [String], holder: String, lease: Double) throws(LedgerError) -> Set<String> {
        try leaseFeeds(feeds, holder: holder, lease: lease, now: try databaseNow())
    }

    /// `leaseFeeds` at `now`, a reading of the database's clock.
    public func leaseFeeds(_ feeds: [String], holder: String, lease: Double, now: Date) throws(LedgerError)
        -> Set<String>
    {
        try writing {
            let until = now.addingTimeInterval(lease)
            try db.run(
                "INSERT INTO watch_members (holder, expires_at) VALUES (?, ?) "
                    + "ON CONFLICT (holder) DO UPDATE SET expires_at = excluded.expires_at",
                [.text(holder), SQLValue(until)])
            try db.run("DELETE FROM watch_members WHERE expires_at <= ?", [SQLValue(now)])
            let members = max(1, try db.query("SELECT COUNT(*) FROM watch_members", []).first?.int(0) ?? 1)
            let share = (feeds.count + members - 1) / members
            try db.run("UPDATE watch_leases SET expires_at = ? WHERE holder = ?", [SQLValue(until), .text(holder)])
            let wanted = Set(feeds)
            var leases: [String: (holder: String, expires: Date)] = [:]
            for row in try db.query("SELECT feed, holder, expires_at FROM watch_leases", []) {
                guard let feed = row.text(0), wanted.contains(feed), let owner = row.text(1), let expires = row.date(2)
                else { continue }
                leases[feed] = (owner, expires)
            }
            var mine = feeds.filter { leases[$0]?.holder == holder }
            for extra in mine.dropFirst(share) {
                try db.run("DELETE FROM watch_leases WHERE feed = ? AND holder = ?", [.text(extra), .text(holder)])
            }
            mine = Array(mine.prefix(share))
            let free = feeds.filter { feed in leases[feed].map { $0.expires <= now } ?? true }
            for feed in free.prefix(max(0, share - mine.count)) {
                try db.run(
                    "INSERT INTO watch_leases (feed, holder, expires_at) VALUES (?, ?, ?) ON CONFLICT (feed) "
                        + "DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at "
                        + "WHERE watch_leases.expires_at <= ?",
                    [.text(feed), .text(holder), SQLValue(until), SQLValue(now)])
            }
            let held = try db.query("SELECT feed FROM watch_leases WHERE holder = ?", [.text(holder)])
            return Set(held.compactMap { $0.text(0) }).intersection(wanted)
        }
    }

    /// A watcher that stops gives its feeds back at once (the others need not wait for the
    /// leases to end).
    public func releaseLeases(holder: String) throws(LedgerError) {
        try writing {
            try db.run("DELETE FROM watch_leases WHERE holder = ?", [.text(holder)])
            try db.run("DELETE FROM watch_members WHERE holder = ?", [.text(holder)])
        }
    }
}
