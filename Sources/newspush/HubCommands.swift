import ArgumentParser
import Foundation
import NewsPushCore
import NewsPushModel
import NewsPushSessions
import NotificationHubs

struct Hub: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Talk to the configured Notification Hub directly.",
        subcommands: [Token.self, TestSend.self, Status.self, Cancel.self])

    struct Token: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the Authorization header value for the configured hub (to debug with curl).")

        @OptionGroup var global: GlobalOptions

        @Option(help: "The resource URI to sign (default: https://<namespace host>/<hub>).")
        var uri: String?

        @Option(help: "Expiry as Unix seconds.")
        var expiry: Int?

        @Option(help: "Lifetime, e.g. 1h or 20m (default 1h).")
        var ttl: String?

        func validate() throws {
            if expiry != nil && ttl != nil { throw ValidationError("give --expiry or --ttl, not both") }
            if let ttl, NewsPushCore.Durations.parse(ttl) == nil {
                throw ValidationError("--ttl '\(ttl)' is not a duration (e.g. 1h, 20m)")
            }
        }

        func run() throws {
            let session = HubSession(context: global.context(try global.loadConfig()))
            Terminal.output(
                try session.token(uri: uri, expiry: expiry, lifetime: ttl.flatMap(NewsPushCore.Durations.parse)))
        }
    }
}
