import Foundation
import NewsPushModel
import Testing

@testable import FeedParsing
@testable import NewsPushCore
@testable import NewsPushLedger
@testable import NewsPushSessions

@Suite("Feed dates")
struct FeedDatesTests {
    @Test(arguments: [
        // RFC 822 and variants
        ("Sun, 22 Nov 2026 06:00:00 GMT", "2026-11-22T06:00:00Z"),
        ("Sun, 22 Nov 2026 06:00:00 +0000", "2026-11-22T06:00:00Z"),
        ("Sun, 22 Nov 2026 07:00:00 +0100", "2026-11-22T06:00:00Z"),
        ("Sun, 22 Nov 2026 01:00:00 EST", "2026-11-22T06:00:00Z"),
        ("Sun, 22 Nov 2026 23:00:00 PDT", "2026-11-23T06:00:00Z"),
        ("Sun, 22 Nov 2026 06:00 GMT", "2026-11-22T06:00:00Z"),
        ("22 Nov 2026 06:00:00 GMT", "2026-11-22T06:00:00Z"),
        ("Sun 22 Nov 2026 06:00:00 GMT", "2026-11-22T06:00:00Z"),
        ("Sun, 22 Nov 26 06:00:00 GMT", "2026-11-22T06:00:00Z"),
        ("Sun, 22 November 2026 06:00:00 GMT", "2026-11-22T06:00:00Z"),
        ("Sun, 22 Nov 2026 06:00:00 UT", "2026-11-22T06:00:00Z"),
        ("Sun, 22 Nov 2026 06:00:00 Z", "2026-11-22T06:00:00Z"),
        ("Sun, 22 Nov 2026 06:00:00", "2026-11-22T06:00:00Z"),
        ("Sun, 22 Nov 2026 06:00:00 -05:00", "2026-11-22T11:00:00Z"),
        ("Sat, Dec 16 2023 02:02:33 PM", "2023-12-16T14:02:33Z"),
        ("Sat, Dec 16 2023 12:02:33 AM", "2023-12-16T00:02:33Z"),
        ("mer, 16 nov 2022 10:00:00 +0100", "2022-11-16T09:00:00Z"),
        ("Seg, 24 Set 2018 10:00:00 -0300", "2018-09-24T13:00:00Z"),
        ("Mo, 02 Mär 2026 08:15:00 +0100", "2026-03-02T07:15:00Z"),
        ("Thu, 01 Jan 1970 00:00:00 GMT", "1970-01-01T00:00:00Z"),
        ("Tue, 29 Feb 2028 12:00:00 GMT", "2028-02-29T12:00:00Z"),
        ("Sun, 22 Nov 2026 06:00:00 CEST", "2026-11-22T04:00:00Z"),
        ("Sun, 22 Nov 2026 06:00:00 GMT+2", "2026-11-22T04:00:00Z"),
        ("Sun,22 Nov 2026 06:00:00 GMT", "2026-11-22T06:00:00Z"),
        ("22-Nov-2026 06:00:00 GMT", "2026-11-22T06:00:00Z"),
        // RFC 3339 / ISO 8601
        ("2026-11-22T06:00:00Z", "2026-11-22T06:00:00Z"),
        ("2026-11-22T06:00:00+00:00", "2026-11-22T06:00:00Z"),
        ("2026-11-22T07:30:00+01:30", "2026-11-22T06:00:00Z"),
        ("2026-02-17T17:36:36-0500", "2026-02-17T22:36:36Z"),
        ("2026-11-22T06:00:00.123Z", "2026-11-22T06:00:00Z"),
        ("2026-11-22T06:00Z", "2026-11-22T06:00:00Z"),
        ("2026-11-22 06:00:00", "2026-11-22T06:00:00Z"),
        ("2026-11-22", "2026-11-22T00:00:00Z"),
        ("20261122", "2026-11-22T00:00:00Z"),
        ("2026/1/10", "2026-01-10T00:00:00Z"),
        ("2026-11-22t06:00:00z", "2026-11-22T06:00:00Z"),
        ("  2026-11-22T06:00:00Z\n", "2026-11-22T06:00:00Z"),
        // More real-world variants
        ("Mon, 2 Nov 2026 06:00:00 GMT", "2026-11-02T06:00:00Z"),
        ("Mon, 02 Nov 2026 6:00:00 GMT", "2026-11-02T06:00:00Z"),
        ("Sunday, 22 November 2026 06:00:00 GMT", "2026-11-22T06:00:00Z"),
        ("Sun, 22 Nov 2026 06:00:00 +0530", "2026-11-22T00:30:00Z"),
        ("Sun, 22 Nov 2026 06:00:00 -0000", "2026-11-22T06:00:00Z"),
        ("Sun, 22 Nov 2026 06:00:00 MST", "2026-11-22T13:00:00Z"),
        ("Sun, 22 Nov 2026 06:00:00 CDT", "2026-11-22T11:00:00Z"),
        ("Sun, 22 Nov 2026 06:00:00 JST", "2026-11-21T21:00:00Z"),
        ("Sun, 22 Nov 2026 06:00:00 AEST", "2026-11-21T20:00:00Z"),
        ("22 Nov 2026 06:00 +0100", "2026-11-22T05:00:00Z"),
        ("Nov 22, 2026 06:00:00 GMT", "2026-11-22T06:00:00Z"),
        ("November 22, 2026", "2026-11-22T00:00:00Z"),
        ("22 November 2026", "2026-11-22T00:00:00Z"),
        ("Sun, 22 Nov 2026", "2026-11-22T00:00:00Z"),
        ("dim., 22 nov. 2026 06:00:00 +0100", "2026-11-22T05:00:00Z"),
        ("Do, 03 Dez 2026 10:00:00 +0100", "2026-12-03T09:00:00Z"),
        ("vie, 04 dic 2026 10:00:00 +0100", "2026-12-04T09:00:00Z"),
        ("Thu, 31 Dec 2026 23:59:59 -1200", "2027-01-01T11:59:59Z"),
        ("Sun, 22 Nov 2026 06:00:60 GMT", "2026-11-22T06:00:59Z"),
        ("2026-11-22T06:00:00+0100", "2026-11-22T05:00:00Z"),
        ("2026-11-22T06:00:00.123456+00:00", "2026-11-22T06:00:00Z"),
        ("2026-11-22T06:00:00 Z", "2026-11-22T06:00:00Z"),
        ("2026-11-22T06Z", "2026-11-22T06:00:00Z"),
        ("2026-11-22 06:00:00 +0000", "2026-11-22T06:00:00Z"),
        ("2026-11-22T24:00:00Z", "2026-11-23T00:00:00Z"),
        ("2028-02-29T00:00:00-08:00", "2028-02-29T08:00:00Z"),
    ])
    func parses(text: String, expected: String) throws {
        let date = try #require(FeedDates.parse(text), "could not parse \(text)")
        #expect(FeedDates.format(date) == expected)
        // The fast path for the common form, when it answers, agrees with the tolerant parser.
        if let fast = FeedDates.parseCommonRFC822(text) {
            #expect(fast == FeedDates.parseRFC822(text), "\(text)")
        }
    }

    @Test func commonFormTakesTheFastPath() {
        #expect(
            FeedDates.parseCommonRFC822("Sun, 22 Nov 2026 06:00:00 GMT").map(FeedDates.format) == "2026-11-22T06:00:00Z"
        )
        #expect(FeedDates.parseCommonRFC822("22 Nov 2026 06:00 -0500").map(FeedDates.format) == "2026-11-22T11:00:00Z")
        #expect(
            FeedDates.parseCommonRFC822("Sun, 22 Nov 2026 06:00:00 EST").map(FeedDates.format) == "2026-11-22T11:00:00Z"
        )
        #expect(
            FeedDates.parseCommonRFC822("Thu, 02 Jul 2015 12:33:53 +01:00").map(FeedDates.format)
                == "2015-07-02T11:33:53Z")
        #expect(
            FeedDates.parseCommonRFC822("Thu, 02 Jul 2015 12:33:53 gmt").map(FeedDates.format) == "2015-07-02T12:33:53Z"
        )
        // Anything else is left to the tolerant parser.
        #expect(FeedDates.parseCommonRFC822("Sunday, 22 November 2026 06:00:00 GMT") == nil)
        #expect(FeedDates.parseCommonRFC822("Sun, 22 Nov 26 06:00:00 GMT") == nil)
    }

    @Test(arguments: [
        "", "yesterday", "Sun, 32 Nov 2026 06:00:00 GMT", "2026-13-01", "2026-02-30", "Sun, 22 Foo 2026 06:00:00 GMT",
        "25:00", "not a date at all 123", "Sun, 22 Nov 2026 25:00:00 GMT", "Feb 30 2026", "0000-00-00",
        "2026-11-22T06:00:00+25:00", "2027-02-29T00:00:00Z", "August 2011", "Nov 2026",
    ])
    func unparseableIsNil(text: String) {
        #expect(FeedDates.parse(text) == nil)
    }

    @Test func formatIsRFC3339UTC() {
        #expect(FeedDates.format(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00Z")
        #expect(FeedDates.format(Date(timeIntervalSince1970: 1_795_330_800)) == "2026-11-22T07:00:00Z")
    }
}
