import Foundation
import NewsPushModel

/// Dates as feeds really write them: RFC 822 and its variants (no seconds, two-digit years,
/// named zones, long or foreign month names, missing comma, AM/PM) and RFC 3339 / ISO 8601
/// variants. Foundation's formatters each accept one exact pattern, so the tolerant parse is
/// written here. Unparseable text gives nil, never an error.
public enum FeedDates {
    /// A feed's date in any of the forms feeds write (RFC 822, RFC 3339, and their common variants); nil when none
    /// fits.
    public static func parse(_ text: String) -> Date? {
        let trimmed = text.trimmedASCIIWhitespace()
        guard !trimmed.isEmpty else { return nil }
        // ISO 8601 starts with an ASCII digit (it reads no others).
        if let first = trimmed.utf8.first, first >= 0x30 && first <= 0x39, let iso = parseISO8601(trimmed) {
            return iso
        }
        return parseCommonRFC822(trimmed) ?? parseRFC822(trimmed)
    }

    // MARK: The common RFC 822 form, fast

    /// "Sat, 22 Nov 2026 06:00:00 +0000" (weekday, seconds optional; GMT/UTC/Z, a numeric or
    /// a known named zone): most feeds write exactly this, so it is read straight from the bytes
    /// before the tolerant tokenizer below. Nil for anything else.
    static func parseCommonRFC822(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { bytes -> Date? in
            var s = DateBytes(bytes)
            // Optional "Sat, "
            if s.count > 4, DateBytes.isLetter(s[0]), DateBytes.isLetter(s[1]), DateBytes.isLetter(s[2]),
                s[3] == UInt8(ascii: ",")
            {
                s.i = 4
                guard s.spaces() else { return nil }
            }
            guard let day = s.number(2), s.spaces(), let month = s.englishMonth(), s.spaces(), let year = s.number(4),
                s.spaces(), let hour = s.number(2), s.skip(":"), let minute = s.number(2)
            else { return nil }
            var second = 0
            if s.skip(":") {
                guard let sec = s.number(2) else { return nil }
                second = sec
            }
            guard s.spaces(), !s.atEnd, let offset = s.commonZone(), s.atEnd, year >= 1000 else { return nil }
            return make(year, month, day, hour, minute, second, offset)
        }
    }

    /// The month of a three-letter English abbreviation packed into an integer.
    fileprivate static func englishMonthNumber(_ packed: UInt32) -> Int? { englishMonths[packed] }

    /// The offset in hours of a named zone (`CET`), if it is one of the known names.
    fileprivate static func zoneHours(_ name: String) -> Int? { zones[name] }

    /// Three-letter English month abbreviations, lower case, packed into an integer.
    private static let englishMonths: [UInt32: Int] = {
        var table: [UInt32: Int] = [:]
        for (index, name) in ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
            .enumerated()
        {
            let b = Array(name.utf8)
            table[(UInt32(b[0]) << 16) | (UInt32(b[1]) << 8) | UInt32(b[2])] = index + 1
        }
        return table
    }()

    // MARK: ISO 8601 / RFC 3339

    /// An RFC 3339 / ISO 8601 date and time, with its zone; nil for anything else.
    public static func parseISO8601(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { bytes -> Date? in
            var s = DateBytes(bytes)
            guard let year = s.digits(4) else { return nil }
            let separated = s.skip("-/")
            guard let month = s.digits(2) ?? (separated ? s.digits(1) : nil) else {
                return s.atEnd ? make(year, 1, 1, 0, 0, 0, 0) : nil
            }
            var day = 1
            if !separated || s.skip("-/") {
                guard let d = s.digits(2) ?? s.digits(1) else { return nil }
                day = d
            }
            var time = (hour: 0, minute: 0, second: 0.0, offset: 0)
            if s.skip("Tt ") {
                guard let read = isoTime(&s) else { return nil }
                time = read
            }
            guard s.atEnd else { return nil }
            let second = time.second
            return make(
                year, month, day, time.hour, time.minute, Int(second), time.offset,
                fraction: second - Double(Int(second)))
        }
    }

    /// The time and zone of an ISO 8601 date, after its `T`.
    private static func isoTime(_ s: inout DateBytes) -> (hour: Int, minute: Int, second: Double, offset: Int)? {
        guard let hour = s.digits(2) else { return nil }
        var minute = 0, second = 0.0, offset = 0
        _ = s.skip(":")
        if let m = s.digits(2) { minute = m }
        if s.skip(":"), let sec = s.digits(2) {
            second = Double(sec) + (s.skip(".,") ? s.fraction() : 0)
        }
        while s.current == UInt8(ascii: " ") { s.i += 1 }
        if s.skip("Zz") {
            offset = 0
        } else if let sign = s.sign() {
            guard let oh = s.digits(2), oh <= 14 else { return nil }
            _ = s.skip(":")
            let om = s.digits(2) ?? 0
            guard om < 60 else { return nil }
            offset = sign * (oh * 3600 + om * 60)
        } else if !s.atEnd, let zone = namedZoneOffset(s.rest.trimmingCharacters(in: .whitespaces)) {
            offset = zone
            s.i = s.count
        }
        return (hour, minute, second, offset)
    }

    // MARK: RFC 822 and variants

    private static let months: [String: Int] = {
        var table: [String: Int] = [:]
        let names: [[String]] = [
            [
                "jan", "january", "januar", "janvier", "enero", "gennaio", "janeiro", "januari", "jänner", "ene", "gen",
                "janv",
            ],
            [
                "feb", "february", "februar", "février", "fevrier", "febrero", "febbraio", "fevereiro", "februari",
                "fév", "fev", "févr",
            ],
            ["mar", "march", "märz", "maerz", "mars", "marzo", "março", "marco", "maart", "mär", "mrz"],
            ["apr", "april", "avril", "abril", "aprile", "avr", "abr"],
            ["may", "mai", "mayo", "maggio", "maio", "mei", "mag"],
            ["jun", "june", "juni", "juin", "junio", "giugno", "junho", "giu"],
            ["jul", "july", "juli", "juillet", "julio", "luglio", "julho", "juil", "lug"],
            ["aug", "august", "août", "aout", "agosto", "augustus", "ago", "aoû"],
            ["sep", "sept", "september", "septembre", "septiembre", "settembre", "setembro", "set"],
            ["oct", "october", "oktober", "octobre", "octubre", "ottobre", "outubro", "okt", "out", "ott"],
            ["nov", "november", "novembre", "noviembre", "novembro"],
            [
                "dec", "december", "dezember", "décembre", "decembre", "diciembre", "dicembre", "dezembro", "dez",
                "déc", "dic",
            ],
        ]
        for (index, list) in names.enumerated() {
            for name in list { table[name] = index + 1 }
        }
        return table
    }()

    private static let zones: [String: Int] = [
        "GMT": 0, "UT": 0, "UTC": 0, "Z": 0, "WET": 0,
        "EST": -5, "EDT": -4, "CST": -6, "CDT": -5, "MST": -7, "MDT": -6, "PST": -8, "PDT": -7,
        "AKST": -9, "AKDT": -8, "HST": -10, "AST": -4, "ADT": -3, "NST": -3, "NDT": -2,
        "BST": 1, "IST": 1, "CET": 1, "CEST": 2, "MET": 1, "MEST": 2, "WEST": 1, "EET": 2, "EEST": 3, "MSK": 3,
        "JST": 9, "KST": 9, "HKT": 8, "SGT": 8, "AWST": 8, "ACST": 9, "AEST": 10, "AEDT": 11, "NZST": 12, "NZDT": 13,
    ]

    private static let zoneBrackets = CharacterSet(charactersIn: "()")

    static func namedZoneOffset(_ name: String) -> Int? {
        let upper = name.uppercased().trimmingCharacters(in: zoneBrackets)
        if let hours = zones[upper] { return hours * 3600 }
        // GMT+2, UTC-05:00
        for prefix in ["GMT", "UTC", "UT"] where upper.hasPrefix(prefix) && upper.count > prefix.count {
            return numericOffset(String(upper.dropFirst(prefix.count)))
        }
        // Military single letters other than Z are ambiguous in practice; treat as UTC like feedparser.
        if upper.count == 1, let c = upper.first, c.isLetter { return 0 }
        return nil
    }

    static func numericOffset(_ token: String) -> Int? {
        guard let signChar = token.first, signChar == "+" || signChar == "-" else { return nil }
        let digits = token.dropFirst().filter { $0 != ":" }
        guard !digits.isEmpty, digits.allSatisfy(\.isNumber), digits.count <= 4 else { return nil }
        let value = Int(digits) ?? 0
        let (h, m) = digits.count <= 2 ? (value, 0) : (value / 100, value % 100)
        guard h <= 14, m < 60 else { return nil }
        return (signChar == "-" ? -1 : 1) * (h * 3600 + m * 60)
    }

    static func parseRFC822(_ text: String) -> Date? {
        guard let tokens = rfc822Tokens(text) else { return nil }
        var parts = RFC822Parts()
        for token in tokens {
            guard parts.read(token) else { return nil }
        }
        guard let (d, y) = dayAndYear(parts.numbers), let m = parts.month else { return nil }
        var hour = parts.hour
        if let pm = parts.pm {
            if pm && hour < 12 { hour += 12 }
            if !pm && hour == 12 { hour = 0 }
        }
        return make(y < 100 ? y + (y < 70 ? 2000 : 1900) : y, m, d, hour, parts.minute, parts.second, parts.offset)
    }

    /// The words of a date, or nil when it has fewer than two runs of digits (a day and a
    /// year: "August 2011" is no date). "16-Nov-2022" and "2022-11-16 10:00" come apart at
    /// the dashes between letters and digits.
    private static func rfc822Tokens(_ text: String) -> [String]? {
        var digitRuns = 0, inRun = false
        for byte in text.utf8 {
            let digit = byte >= 0x30 && byte <= 0x39
            if digit && !inRun { digitRuns += 1 }
            inRun = digit
        }
        guard digitRuns >= 2 else { return nil }
        let tokens = text.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "\t" || $0 == "\n" }).map(String.init)
        return tokens.flatMap { token -> [String] in
            if token.utf8.contains(UInt8(ascii: "-")), !token.hasPrefix("-"), token.contains(where: \.isLetter),
                !token.hasPrefix("GMT"), !token.hasPrefix("UTC")
            {
                return token.split(separator: "-").map(String.init)
            }
            return [token]
        }
    }

    /// What the words of a tolerant date said: a time, a month, a zone, am/pm, and numbers.
    private struct RFC822Parts {
        var month: Int?
        var hour = 0, minute = 0, second = 0, offset = 0
        var pm: Bool?
        var numbers: [Int] = []

        /// Reads one word; false when it makes the text no date.
        mutating func read(_ token: String) -> Bool {
            var lower = token.lowercased()
            while lower.hasSuffix(".") { lower.removeLast() }
            if token.utf8.contains(UInt8(ascii: ":")) && token.first?.isNumber == true {
                let parts = token.split(separator: ":").compactMap { Int($0) }
                guard parts.count >= 2, parts.count <= 3, parts.count == token.split(separator: ":").count else {
                    return false
                }
                hour = parts[0]
                minute = parts[1]
                if parts.count == 3 { second = parts[2] }
            } else if lower == "am" || lower == "pm" {
                pm = lower == "pm"
            } else if let m = months[lower] ?? (lower.count > 3 ? months[String(lower.prefix(3))] : nil), month == nil {
                month = m
            } else if token.hasPrefix("+") || token.hasPrefix("-"), let o = numericOffset(token) {
                offset = o
            } else if token.first?.isLetter == true,
                zones[token.uppercased()] != nil || token.uppercased().hasPrefix("GMT")
                    || token.uppercased().hasPrefix("UTC"),
                let o = namedZoneOffset(token)
            {
                offset = o
            } else if let value = Int(token) {
                numbers.append(value)
            } else if token.first?.isNumber == true, let value = Int(token.prefix { $0.isNumber }) {
                numbers.append(value)  // "16th"
            }
            // Anything else (weekday names in any language) is ignored.
            return true
        }
    }

    /// The day and the year among a date's numbers (a number over 31, or the one after the
    /// day, is the year); nil when they are not exactly those two.
    private static func dayAndYear(_ numbers: [Int]) -> (day: Int, year: Int)? {
        var day: Int?, year: Int?
        for value in numbers {
            if value > 31 || (day != nil && year == nil) {
                if year == nil { year = value } else { return nil }
            } else if day == nil {
                day = value
            } else {
                return nil
            }
        }
        guard let day, let year else { return nil }
        return (day, year)
    }

    private static func make(
        _ year: Int, _ month: Int, _ day: Int, _ hour: Int, _ minute: Int, _ second: Int,
        _ offset: Int, fraction: Double = 0
    ) -> Date? {
        guard (1...12).contains(month), (1...31).contains(day), (0...24).contains(hour), (0...59).contains(minute),
            (0...60).contains(second), (1000...9999).contains(year)
        else { return nil }
        let daysInMonth = [
            31, (year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30,
            31,
        ]
        guard day <= daysInMonth[month - 1] else { return nil }
        // Days from civil (Howard Hinnant's algorithm): exact, and much faster than Calendar.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        let seconds = days * 86400 + hour * 3600 + minute * 60 + min(second, 59) - offset
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    /// RFC 3339 in UTC with `Z` and whole seconds, the form of every date newspush prints.
    public static func format(_ date: Date) -> String { Timestamp.format(date) }
}

/// A cursor over a date's bytes, for the hand-written parsers above.
private struct DateBytes {
    let s: UnsafeBufferPointer<UInt8>
    var i = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) { s = bytes }

    var count: Int { s.count }
    var atEnd: Bool { i >= s.count }
    var current: UInt8? { i < s.count ? s[i] : nil }
    subscript(index: Int) -> UInt8 { s[index] }
    /// The rest of the text.
    var rest: String { String(decoding: UnsafeBufferPointer(rebasing: s[i...]), as: UTF8.self) }

    static func isLetter(_ b: UInt8) -> Bool { (b | 0x20) >= 0x61 && (b | 0x20) <= 0x7A }

    /// One to `maxDigits` digits.
    mutating func number(_ maxDigits: Int) -> Int? {
        var value = 0, count = 0
        while i < s.count, count < maxDigits, s[i] >= 0x30 && s[i] <= 0x39 {
            value = value * 10 + Int(s[i] - 0x30)
            i += 1
            count += 1
        }
        return count > 0 ? value : nil
    }

    /// Exactly `count` digits; nothing is read when they are not there.
    mutating func digits(_ count: Int) -> Int? {
        guard i + count <= s.count else { return nil }
        var value = 0
        for k in 0..<count {
            let c = s[i + k]
            guard c >= 0x30 && c <= 0x39 else { return nil }
            value = value * 10 + Int(c - 0x30)
        }
        i += count
        return value
    }

    /// Reads one byte of `set`, if that is what comes.
    mutating func skip(_ set: StaticString) -> Bool {
        guard let c = current else { return false }
        for k in 0..<set.utf8CodeUnitCount where set.utf8Start[k] == c {
            i += 1
            return true
        }
        return false
    }

    /// Reads one or more spaces.
    mutating func spaces() -> Bool {
        guard current == 0x20 else { return false }
        while current == 0x20 { i += 1 }
        return true
    }

    /// Reads a sign: +1, -1, or nil (nothing read).
    mutating func sign() -> Int? {
        if skip("+") { return 1 }
        if skip("-") { return -1 }
        return nil
    }

    /// The digits after a decimal point, as a fraction.
    mutating func fraction() -> Double {
        var fraction = 0.0, scale = 0.1
        while let c = current, c >= 0x30 && c <= 0x39 {
            fraction += Double(c - 0x30) * scale
            scale /= 10
            i += 1
        }
        return fraction
    }

    /// A three-letter English month ("Nov"), as its number.
    mutating func englishMonth() -> Int? {
        guard i + 3 <= s.count, Self.isLetter(s[i]), Self.isLetter(s[i + 1]), Self.isLetter(s[i + 2]) else {
            return nil
        }
        let m = (UInt32(s[i] | 0x20) << 16) | (UInt32(s[i + 1] | 0x20) << 8) | UInt32(s[i + 2] | 0x20)
        guard let month = FeedDates.englishMonthNumber(m) else { return nil }
        i += 3
        return month
    }

    /// The zone of the common RFC 822 form: "+0100", "+01:00", "GMT", or a known name.
    mutating func commonZone() -> Int? {
        if let sign = sign() {
            guard let hours = number(2), !atEnd else { return nil }
            _ = skip(":")
            let start = i
            guard let minutes = number(2), i - start == 2, hours <= 14, minutes < 60 else { return nil }
            return sign * (hours * 3600 + minutes * 60)
        }
        let start = i
        while let c = current, Self.isLetter(c) { i += 1 }
        guard i > start, i - start <= 4 else { return nil }
        // GMT, by far the most common, needs no String.
        if i - start == 3, s[start] | 0x20 == UInt8(ascii: "g"), s[start + 1] | 0x20 == UInt8(ascii: "m"),
            s[start + 2] | 0x20 == UInt8(ascii: "t")
        {
            return 0
        }
        let zone = String(decoding: UnsafeBufferPointer(rebasing: s[start..<i]), as: UTF8.self).uppercased()
        return FeedDates.zoneHours(zone).map { $0 * 3600 }
    }
}
