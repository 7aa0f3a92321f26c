import ArgumentParser
import Foundation
import Logging
import NIOCore
import NewsPushCore
import NewsPushDesk
import NewsPushHTTP
import NewsPushSessions

struct DeskCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "desk",
        abstract: "The editors' web desk: what waits, what the next run would push, what was sent, and publishing.",
        discussion: """
            Serves the desk over HTTP on 127.0.0.1:8080 (put it behind a TLS reverse proxy to reach it from \
            elsewhere). Users sign in with the names and bcrypt hashes of the desk.users file, which \
            `newspush desk add-user` writes.
            """,
        subcommands: [Serve.self, AddUser.self],
        defaultSubcommand: Serve.self)

    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "serve", abstract: "Serve the desk (the default: `newspush desk --listen …`).")

        @OptionGroup var global: GlobalOptions

        @Option(help: "ADDRESS:PORT to listen on (0.0.0.0:8080 for every interface; [::1]:8080).")
        var listen = "127.0.0.1:8080"

        @Option(help: "How old the next run's preview may be before a page computes it again (e.g. 1m).")
        var previewAge = "1m"

        func validate() throws {
            _ = try Serving.address(listen)
            guard Durations.parse(previewAge) != nil else {
                throw ValidationError("--preview-age '\(previewAge)' is not a duration")
            }
        }

        func run() async throws {
            let context = global.context(try global.loadConfig())
            let users = try DeskUsers.load(path: context.config.deskUsersPath)
            Terminal.note("desk users from \(context.config.deskUsersPath) (\(users.users.count))")
            if users.users.isEmpty {
                Terminal.note(
                    "\(context.config.deskUsersPath) has no users yet: add one with newspush desk add-user NAME "
                        + "--role editor (nobody can sign in until then)")
            }
            let address = try Serving.address(listen)
            if !address.isLoopback {
                Terminal.note("the desk listens on \(listen): serve it to others only behind a TLS reverse proxy")
            }
            let desk = Desk(context: context, previewAge: Durations.parse(previewAge) ?? 60)
            var logger = Logger(label: "newspush-desk")
            logger.logLevel = .warning
            try await Serving.serve("desk", listen: listen, address: address) { onReady in
                try await DeskServer.run(desk, address: address, logger: logger, onReady: onReady)
            }
        }
    }

    struct AddUser: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add-user",
            abstract: "Add a desk user (or set a user's role and password) in the desk.users file.",
            discussion: """
                The password is read from standard input when it is not a terminal (one line), else asked \
                twice. Only its bcrypt hash is stored; the file is created with mode 0600.
                """)

        @OptionGroup var global: GlobalOptions

        @Argument(help: "The user's name (letters, digits, '.', '_', '-', '@').") var name: String

        @Option(help: "viewer (sees everything) or editor (also approves, rejects and publishes).")
        var role: DeskRole

        func run() throws {
            try UsersFile<DeskRole>.addUser(
                name, role: role, path: try global.loadConfig(requireHub: false).deskUsersPath)
        }
    }
}

extension DeskRole: ExpressibleByArgument {}

extension Terminal {
    /// A new password for `name`: one line from a pipe, or asked twice on a terminal without echo.
    static func newPassword(for name: String) throws -> String {
        guard isatty(STDIN_FILENO) == 1 else {
            guard let line = readLine(strippingNewline: true) else {
                throw ValidationError("no password on standard input")
            }
            return line
        }
        let first = secret("Password for \(name): ")
        let second = secret("Again: ")
        guard first == second else { throw ValidationError("the two passwords differ; nothing changed") }
        return first
    }
}
