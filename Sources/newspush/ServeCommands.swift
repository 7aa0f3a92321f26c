import ArgumentParser
import Foundation
import NIOCore
import NewsPushHTTP

/// A front end could not be served (its address is taken or cannot be bound, or it stopped).
struct CannotServe: Error {
    var reason: String
}

/// What `desk serve` and `api serve` share: the `--listen` address, the line scripts wait for,
/// and one way to say why serving failed.
enum Serving {
    /// The `--listen` value as an address, or the usage error that names it.
    static func address(_ listen: String) throws -> ListenAddress {
        guard let address = ListenAddress(listen) else {
            throw ValidationError("--listen '\(listen)' is not ADDRESS:PORT")
        }
        return address
    }

    /// Runs `serve` (a front end's `run`) until it returns, printing `newspush NAME listening on
    /// http://HOST:PORT/` once the port is bound.
    static func serve(
        _ name: String, listen: String, address: ListenAddress,
        _ serve: (@escaping @Sendable (Int) async -> Void) async throws -> Void
    ) async throws {
        do {
            try await serve { port in
                // Written straight to the descriptor: scripts wait for this line to learn the port.
                FileHandle.standardOutput.write(
                    Data("newspush \(name) listening on http://\(address.host):\(port)/\n".utf8))
            }
        } catch let error as IOError {
            throw CannotServe(reason: "cannot listen on \(listen): \(error.description) (--listen picks another)")
        } catch {
            throw CannotServe(reason: "the \(name) stopped: \(error)")
        }
    }
}

extension UsersFile {
    /// `desk add-user` and `api add-user`: asks for `name`'s password, sets their role and
    /// password in the users file at `path`, and says so.
    static func addUser(_ name: String, role: Role, path: String) throws {
        let password = try Terminal.newPassword(for: name)
        var users = try load(path: path)
        let existed = users.users[name] != nil
        try users.set(name, role: role, password: password)
        Terminal.output("\(existed ? "updated" : "added") \(name) (\(role.rawValue)) in \(path)")
    }
}
