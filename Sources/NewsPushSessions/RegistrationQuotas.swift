import Foundation
import NewsPushCore

/// Whether a new installation of an anonymous phone or a token user may be made (SPEC §9,
/// "Abuse"): anyone can be either, so both count against the caps (new installations per
/// network per day, in the front end's memory; none past `api.max_installations`). Basic
/// readers, whom the operator made, are not counted. The session asks, under the
/// installation's keys, only when the write would make a new device.
public protocol NewInstallationAdmission: Sendable {
    /// Nil when a new installation from `network` may be made now; else the answer.
    /// `count` counts the index (when the last count is too old).
    func admitNew(network: String?, now: Date, count: () throws -> Int) throws -> RegistrationOutcome?
}
