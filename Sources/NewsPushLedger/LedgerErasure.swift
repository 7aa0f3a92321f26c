import Foundation
import NewsPushModel

extension Ledger {
    /// Erases a forgotten reader (SPEC §9, "Forgetting erases") in one transaction: the ids
    /// reserved for them, their secure pushes and reads, every outbox row addressed to them
    /// (their tag in its expression) or sent by them (`from`), with the review rows of those,
    /// and every audit row that names them or their tag, which keeps what happened under
    /// `[a forgotten reader]`. Their installations are removed by the forget itself, under
    /// their keys. `digest`: the form earlier forgets wrote of the name (`sha256:` and 16 hex
    /// digits, which a dictionary reverses). Returns how many rows were erased or rewritten.
    @discardableResult
    public func eraseReader(_ user: String, tag: String, digest: String) throws(LedgerError) -> Int {
        let erased = try writing(durable: true) { () throws -> Int in
            var count = try db.run("DELETE FROM registration_ids WHERE owner = ?", [.text(user)])
            count += try db.run("DELETE FROM secure_reads WHERE reader = ?", [.text(user)])
            let pushes = try db.query("SELECT id, tags, sender FROM secure_pushes", []).filter {
                $0.text(2) == user || Self.names(tag, in: $0.text(1) ?? "")
            }
            for row in pushes {
                guard let id = row.int(0) else { continue }
                count += try db.run("DELETE FROM secure_reads WHERE secure_id = ?", [.integer(Int64(id))])
                count += try db.run("DELETE FROM secure_pushes WHERE id = ?", [.integer(Int64(id))])
            }
            let entries = try db.query("SELECT id, tags, properties FROM outbox", []).filter { row in
                Self.names(tag, in: row.text(1) ?? "") || Self.sender(of: row.text(2) ?? "") == user
            }.compactMap { $0.text(0) }
            for id in entries {
                count += try db.run("DELETE FROM review WHERE entry_id = ?", [.text(id)])
                count += try db.run("DELETE FROM outbox WHERE id = ?", [.text(id)])
            }
            count += try rewriteAudit(naming: user, tag: tag, digest: digest)
            return count
        }
        // Best effort, on the connection's turn like every other use of it (a back-end's
        // threads share it): the rows are gone either way; the next checkpoint empties the log.
        _ = try? reading { try db.forgetErased() }
        return erased
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

    /// `text` with every whole occurrence of `tag`, and the digest, replaced.
    private static func scrub(_ text: String, tag: String, digest: String) -> String {
        var out = text.replacingOccurrences(of: digest, with: forgottenReader)
        out = out.replacingOccurrences(of: tag, with: forgottenReader)
        return out
    }

    /// The `from` property of an outbox row's properties (a message's or secure push's sender).
    private static func sender(of properties: String) -> String? {
        guard properties.contains("\"from\""),
            let object = try? JSONSerialization.jsonObject(with: Data(properties.utf8)) as? [String: Any]
        else { return nil }
        return object["from"] as? String
    }
}
