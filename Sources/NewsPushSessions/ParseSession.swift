import FeedParsing
import Foundation
import NewsPushCore
import NewsPushModel

/// `parse` as a session: feed files, URLs or standard input through the one fetch → parse stage.
public enum ParseSession {
    /// Each source parsed, in order; `standardInput` is read for a source `-`. Relative links
    /// resolve only against http(s) sources; `clock` dates the fetches (a Retry-After's end).
    public static func parse(
        _ sources: [String], baseFolder: String, clock: SessionClock, standardInput: () -> Data
    ) -> [ParseOutput] {
        let settings = FetchSettings()
        var fetched = FeedFetcher(settings: settings, baseFolder: baseFolder).fetch(
            sources.map { $0 == "-" ? "" : $0 }, now: clock.now())
        if let stdin = sources.firstIndex(of: "-") {
            fetched[stdin] = FetchedFeed(url: "-", status: .ok, body: standardInput(), finalURL: "-")
        }
        return zip(sources, FeedReading.read(fetched, budget: settings.parseBudget)).map { source, read in
            ParseOutput(source: source, feed: read.feed, error: read.feed == nil ? read.error ?? "not read" : nil)
        }
    }
}
