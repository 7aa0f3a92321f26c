import Foundation
import NewsPushModel

/// What a forgotten reader leaves of a push's tag expression (SPEC §9): it reached them alone
/// (erased with them), or others too (kept, without them).
public enum ForgottenReach: Sendable, Equatable {
    /// The expression reaches nobody but the reader: the row goes.
    case onlyThem
    /// The expression as it reached everyone else, without the reader's tag.
    case others(String)
}

extension Ledger {
    /// Erases a forgotten reader (SPEC §9, "Forgetting erases") in one transaction: the ids
    /// reserved for them, their secure pushes and reads, every outbox row sent by them (`from`)
    /// or addressed to them alone (with the review rows of those), and every audit row's mention
    /// of them or their tag, which keeps what happened under `[a forgotten reader]`. A row
    /// addressed to others as well (a broadcast that excluded them, `World && !username:alice`)
    /// is kept, whatever its state (held, scheduled, pending, sent), its expression rewritten by
    /// `reach` without their tag. Their installations are removed by the forget itself, under
    /// their keys. `digest`: the form earlier forgets wrote of the name (`sha256:` and 16 hex
    /// digits, which a dictionary reverses); `credentials`: the digests their remembered
    /// credentials are filed under. Returns how many rows were erased or rewritten. The
    /// write-ahead log's copies of the erased rows go at the next checkpoint (`forgetErased`).
    @discardableResult
    public func eraseReader(
        _ user: String, tag: String, digest: String, credentials: [String] = [], reach: (String) -> ForgottenReach
    ) throws(LedgerError) -> Int {
        try writing(durable: true) { () throws -> Int in
            var count = try db.run("DELETE FROM registration_ids WHERE owner = ?", [.text(user)])
            for reader in credentials {
                count += try db.run("DELETE FROM remembered_credentials WHERE reader = ?", [.text(reader)])
            }
            count += try db.run("DELETE FROM secure_reads WHERE reader = ?", [.text(user)])
            count += try eraseSecurePushes(user, tag: tag, reach: reach)
            count += try eraseOutbox(user, tag: tag, reach: reach)
            count += try rewriteAudit(naming: user, tag: tag, digest: digest)
            return count
        }
    }

    /// Secure pushes sent by the reader or to them alone go with their reads; those to others as
    /// well keep going to the others.
    private func eraseSecurePushes(_ user: String, tag: String, reach: (String) -> ForgottenReach) throws -> Int {
        var count = 0
        let rows = try db.query(
            "SELECT id, tags, sender FROM secure_pushes WHERE sender = ? OR tags LIKE ?",
            [.text(user), .text("%\(tag)%")])
        for row in rows {
            guard let id = row.int(0) else { continue }
            let tags = row.text(1) ?? ""
            guard row.text(2) == user || Self.names(tag, in: tags) else { continue }
            if row.text(2) != user, case .others(let rest) = reach(tags) {
                count += try db.run(
                    "UPDATE secure_pushes SET tags = ? WHERE id = ?", [.text(rest), .integer(Int64(id))])
                continue
            }
            count += try db.run("DELETE FROM secure_reads WHERE secure_id = ?", [.integer(Int64(id))])
            count += try db.run("DELETE FROM secure_pushes WHERE id = ?", [.integer(Int64(id))])
        }
        return count
    }

    /// Outbox rows sent by the reader or to them alone go with their review rows; those to
    /// others as well are kept without their tag.
    private func eraseOutbox(_ user: String, tag: String, reach: (String) -> ForgottenReach) throws -> Int {
        var count = 0
        let rows = try db.query(
            "SELECT id, tags, properties FROM outbox WHERE tags LIKE ? OR properties LIKE ?",
            [.text("%\(tag)%"), .text("%\"from\"%")])
        for row in rows {
            guard let id = row.text(0) else { continue }
            let tags = row.text(1) ?? ""
            let fromThem = Self.sender(of: row.text(2) ?? "") == user
            guard fromThem || Self.names(tag, in: tags) else { continue }
            if !fromThem, case .others(let rest) = reach(tags) {
                count += try db.run("UPDATE outbox SET tags = ? WHERE id = ?", [.text(rest), .text(id)])
                continue
            }
            count += try db.run("DELETE FROM review WHERE entry_id = ?", [.text(id)])
            count += try db.run("DELETE FROM outbox WHERE id = ?", [.text(id)])
        }
        return count
    }

    /// Leaves no copy of erased rows in the engine's own files (SQLite: the write-ahead log
    /// emptied into the file, whose deleted content `secure_delete` zeroed): a forget's last step,
    /// outside its transaction. The app back-end does it on its sweeper's pass after a forget
    /// (once a minute at most) rather than in each request: it takes the shared connection's
    /// turn while it runs. Best effort: the rows are gone either way.
    public func forgetErased() {
        _ = try? reading { try db.forgetErased() }
    }

    /// Audit rows naming the reader: a message they sent (`editor`), a push or message to
    /// them (their tag in `detail`), an earlier forget's `digest` of their name.
    private func rewriteAudit(naming user: String, tag: String, digest: String) throws -> Int {
        let rows = try db.query(
            "SELECT id, editor, detail, action FROM audit WHERE editor = ? OR detail LIKE ? OR detail LIKE ?",
            [
                .text(user), .text("%" + tag + "%"), .text("%" + digest + "%"),
            ])
        var count = 0
        for row in rows {
            guard let id = row.text(0) else { continue }
            let detail = row.text(2) ?? ""
            let byReader =
                row.text(1) == user
                && (row.text(3) == "forgotten" || detail.hasPrefix("a message through newspush api"))
            let namesReader = Self.names(tag, in: detail) || detail.contains(digest)
            guard byReader || namesReader else { continue }
            let editor = byReader ? Self.forgottenReader : row.text(1) ?? ""
            let scrubbed = namesReader ? Self.scrub(detail, tag: tag, digest: digest) : detail
            count += try db.run(
                "UPDATE audit SET editor = ?, detail = ? WHERE id = ?", [.text(editor), .text(scrubbed), .text(id)])
        }
        return count
    }

    /// What the audit says instead of a forgotten reader's name or tag.
    public static let forgottenReader = "[a forgotten reader]"

    /// Whether the tag expression `expression` names `tag` (as a whole tag, not a longer one's start).
    static func names(_ tag: String, in expression: String) -> Bool {
        var rest = expression[...]
        while let range = rest.range(of: tag) {
            let before =
                range.lowerBound == expression.startIndex ? nil : expression[expression.index(before: range.lowerBound)]
            let after = range.upperBound == expression.endIndex ? nil : expression[range.upperBound]
            if !Self.isTagCharacter(before), !Self.isTagCharacter(after) { return true }
            rest = expression[range.upperBound...]
        }
        return false
    }

    private static func isTagCharacter(_ character: Character?) -> Bool {
        guard let character, character.isASCII else { return false }
        return character.isLetter || character.isNumber || "_@#.:-".contains(character)
    }

    /// `text` with every whole occurrence of `tag` (not a longer tag it begins: forgetting
    /// `username:al` leaves `username:alice`), and the digest, replaced.
    static func scrub(_ text: String, tag: String, digest: String) -> String {
        var out = ""
        var rest = text.replacingOccurrences(of: digest, with: forgottenReader)[...]
        while let range = rest.range(of: tag) {
            let before = range.lowerBound == rest.startIndex ? out.last : rest[rest.index(before: range.lowerBound)]
            let after = range.upperBound == rest.endIndex ? nil : rest[range.upperBound]
            out += rest[..<range.lowerBound]
            out += !isTagCharacter(before) && !isTagCharacter(after) ? forgottenReader : tag
            rest = rest[range.upperBound...]
        }
        return out + rest
    }

    /// The `from` property of an outbox row's properties (a message's or secure push's sender).
    private static func sender(of properties: String) -> String? {
        guard properties.contains("\"from\""),
            let object = try? JSONSerialization.jsonObject(with: Data(properties.utf8)) as? [String: Any]
        else { return nil }
        return object["from"] as? String
    }
}
