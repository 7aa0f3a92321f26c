/// Bytes as lower-case hex: story keys, digests, network keys, pseudonyms. One routine, two
/// digits per byte from a table (`String(format:)` per byte was 8 % of a registration in
/// `newspush api`).
public enum Hex {
    /// `bytes` in lower-case hex.
    public static func string(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
