import Foundation
import NewsPushCore
import NewsPushHTTP
import NewsPushSessions
import Synchronization

/// The caps that keep the hub's device quota for real readers (SPEC §9, "Abuse"), shared by a
/// back-end's sessions: new installations of anonymous phones and token users per network per
/// day, and none at all past `api.max_installations` (Basic readers still register: their own
/// cap is `api.max_devices_per_user`, enforced by the write itself under the user's key).
final class RegistrationQuotas: NewInstallationAdmission {
    let settings: ApiSettings
    private let perNetwork = RateLimits(capacity: 100_000)
    /// The index's size as last counted, and when (counted again after `totalMaxAge`: a count
    /// is a walk of the index, too dear for every registration).
    private let total = Mutex<(count: Int, at: Date)?>(nil)
    static let totalMaxAge: Double = 10

    /// The caps of `settings`, none used yet.
    init(settings: ApiSettings) {
        self.settings = settings
    }

    func admitNew(network: String?, now: Date, count: () throws -> Int) throws -> RegistrationOutcome? {
        let known = total.withLock { $0.flatMap { now.timeIntervalSince($0.at) < Self.totalMaxAge ? $0.count : nil } }
        let installations = try known ?? count()
        if known == nil { total.withLock { $0 = (installations, now) } }
        guard installations < settings.maxInstallations else {
            return .hubUnavailable(
                "no room for new installations (api.max_installations): try again later",
                retryAfter: 3600)
        }
        let limit = settings.newAnonymousPerNetwork
        if let network, let wait = perNetwork.take("n:" + network, count: limit.count, per: limit.period, now: now) {
            return .tooMany("too many new installations from this network", retryAfter: wait)
        }
        total.withLock { $0?.count += 1 }
        return nil
    }
}
