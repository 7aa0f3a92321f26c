import Foundation
import NewsPushCore

/// Whether a new anonymous installation may be made (SPEC §9, "Abuse"): the front end keeps
/// the caps (new anonymous installations per network per day, in its memory; none past
/// `api.max_installations`) and the session asks, under the installation's keys, only when the
/// write would make a new device.
public protocol AnonymousAdmission: Sendable {
    /// Nil when a new anonymous installation from `network` may be made now; else the answer.
    /// `count` counts the index (when the last count is too old).
    func admitAnonymous(network: String?, now: Date, count: () throws -> Int) throws -> RegistrationOutcome?
}
