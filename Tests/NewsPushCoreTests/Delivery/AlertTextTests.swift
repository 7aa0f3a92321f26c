import Foundation
import NewsPushModel
import Testing

@testable import NewsPushCore
@testable import NewsPushLedger
@testable import NewsPushSessions

@Suite("Alert text and push properties")
struct AlertTextTests {
    @Test func longTextIsCutAfterAWordWithAnEllipsis() {
        let text = "Parliament passes the emergency budget after an all-night session that ran into the morning"
        let cut = AlertText.fit(text, limit: 40)
        #expect(cut == "Parliament passes the emergency budget…")
        #expect(cut.count <= 40)
        #expect(AlertText.fit("Short enough", limit: 40) == "Short enough")
    }

    @Test func neverInsideAGraphemeCluster() {
        // Flags and family emoji are several scalars each; a cut must not split them.
        let text = String(repeating: "🇫🇷👨‍👩‍👧", count: 30)
        let cut = AlertText.fit(text, limit: 11)
        // Cut by bytes as well (four a character): whole emoji only, within both bounds.
        #expect(cut.count <= 11 && cut.count >= 4)
        #expect(cut.utf8.count <= AlertText.byteLimit(characters: 11))
        #expect(cut.hasSuffix("…"))
        #expect(cut.dropLast().allSatisfy { $0 == "🇫🇷" || $0 == "👨‍👩‍👧" })
    }

    @Test func controlCharactersGoAndTextIsNFC() {
        let decomposed = "Cafe\u{301} \u{0007}opens\n\n\tin  Ze\u{301}rich\u{0085}"
        #expect(AlertText.fit(decomposed, limit: 178) == "Café opens in Zérich")
        #expect(AlertText.fit(decomposed, limit: 178).unicodeScalars.contains("\u{E9}"))
    }

    @Test func propertiesCarryEverySpecField() {
        var settings = CategorySettings(tags: "World", message: CategorySettings.defaultMessage)
        settings.messages = ["fr": "Dernière minute ({category}) : {title}"]
        settings.names = ["fr": "Monde"]
        settings.importance = .minor
        let content = PushContent(
            category: .world, title: "Storm closes the harbour", url: "https://news.example.org/s?x=1",
            source: "Desk", id: "guid:storm", image: "https://img.example.org/s.jpg", language: "fr-CA",
            importance: .minor)
        let p = PushRequests.properties(
            content, settings: settings, linkParams: [("utm_source", "newspush"), ("utm_campaign", "{category}")])
        #expect(
            p["messageParam"] == "Dernière minute (Monde) : Storm closes the harbour",
            "a French feed's items use the fr template")
        #expect(p["messageParam_fr"] == "Dernière minute (Monde) : Storm closes the harbour")
        #expect(p["url"] == "https://news.example.org/s?x=1&utm_source=newspush&utm_campaign=World")
        #expect(p["image"] == "https://img.example.org/s.jpg")
        #expect(p["collapseId"] == CollapseID.of("guid:storm") && p["collapseId"]!.utf8.count <= 64)
        #expect(p["importance"] == "minor" && p["priority"] == "5" && p["interruptionLevel"] == "active")
        #expect(p["id"] == "guid:storm", "the story key never carries tracking parameters")
    }

    /// What no lock screen should show: references left over from double escaping, titles of
    /// only markup or entities, summaries that repeat the headline.
    @Test(arguments: [
        ("AT&amp;T and T&#8209;Mobile merge", "AT&T and T‑Mobile merge"),
        ("Q&amp;amp;A", "Q&A"),
        ("<b>Live:</b> talks resume", "Live: talks resume"),
        ("Plain headline", "Plain headline"),
        ("Fish & chips < 5 £", "Fish & chips < 5 £"),
    ])
    func headlinesLoseLeftoverEscapes(title: String, expected: String) {
        #expect(AlertCopy.headline(title: title, summary: nil) == expected)
    }

    @Test func aTitleWithNothingReadableGivesWayToTheSummary() {
        let summary = "Rescue teams reached the village overnight. More to follow."
        for title in ["\u{A0}", "<img src=\"x.png\">", "&nbsp;", "", "—", nil] as [String?] {
            #expect(
                AlertCopy.headline(title: title, summary: summary) == "Rescue teams reached the village overnight.",
                "\(String(describing: title))")
        }
        #expect(AlertCopy.headline(title: "&nbsp;", summary: "<p></p>") == nil)
    }

    @Test func summariesDoNotRepeatTheHeadline() {
        #expect(
            AlertCopy.summary("Quake hits Chile. Thousands flee the coast.", headline: "Quake hits Chile")
                == "Thousands flee the coast.")
        #expect(
            AlertCopy.summary("QUAKE HITS CHILE — thousands flee", headline: "Quake hits Chile") == "thousands flee")
        #expect(AlertCopy.summary("Quake hits Chile", headline: "Quake hits Chile.") == "")
        #expect(
            AlertCopy.summary("Thousands flee the coast after a quake", headline: "Quake hits Chile")
                == "Thousands flee the coast after a quake")
        #expect(AlertCopy.summary(nil, headline: "Quake hits Chile") == "")
    }

    /// Fuzzing found it: a long summary that starts with a long headline took quadratic time
    /// (the headline's length was counted again for every character dropped).
    @Test func aLongSummaryRepeatingALongHeadlineIsLinear() {
        let headline = String(repeating: "Storm update ", count: 4_000)
        let summary = headline + ". The coast is evacuated."
        var result = ""
        let cpu = threadCPUSeconds { result = AlertCopy.summary(summary, headline: headline) }
        #expect(result == "The coast is evacuated.")
        #expect(cpu < 3, "took \(cpu) s of CPU")
    }
}
