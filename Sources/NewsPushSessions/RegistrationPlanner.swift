import Foundation
import NewsPushCore
import NewsPushModel
import NotificationHubs

/// What a registration asks for, worked out from the request and the config alone (SPEC §9):
/// the installation with the tags the back-end allows and the template set it is written with,
/// or why it is refused. Made once per session or back-end, its template sets computed then.
public struct RegistrationPlanner: Sendable {
    private let api: ApiSettings
    /// The languages of the categories' messages (as property suffixes).
    private let languages: Set<String>
    /// Each platform's template set and digest: `platform` alone, and `platform/lang` for
    /// each language of the categories' messages.
    private let sets: [String: (templates: [String: HubInstallation.Template], digest: String)]

    /// The planner of `context`'s newsroom.
    public init(context: SessionContext) {
        api = context.config.api
        languages = context.config.languages
        var sets: [String: (templates: [String: HubInstallation.Template], digest: String)] = [:]
        for platform in ApiSettings.defaultTemplates.keys {
            sets[platform] = Self.set(api.templates[platform], platform: platform, language: nil)
            for language in languages {
                sets[platform + "/" + language] = Self.set(
                    api.templates[platform], platform: platform, language: language)
            }
        }
        self.sets = sets
    }

    /// The installation `request` asks for at `now`, with the handle as written to the hub
    /// and the topics dropped; or why it is refused.
    public func registration(_ request: DeviceRegistration, caller: Caller, now: Date)
        -> Result<(record: InstallationRecord, handle: String, ignored: [String]), DeviceRules.Refusal>
    {
        guard DeviceRules.isValidId(request.id) else {
            return .failure(.init(message: "the installation id must be 1 to 64 of A-Z a-z 0-9 . _ -"))
        }
        if caller == .anonymous && !api.anonymous {
            return .failure(.init(message: "sign in first: this back-end takes no anonymous installations"))
        }
        let platform: String
        let handle: String
        switch DeviceRules.check(platform: request.platform, handle: request.handle, strict: api.strictHandles) {
        case .failure(let why): return .failure(why)
        case .success(let checked): (platform, handle) = checked
        }
        if let language = request.language, !DeviceRules.isLanguage(language) {
            return .failure(.init(message: "language '\(language)' is not a language tag (en, fr, pt-BR)"))
        }
        let (tags, ignored) = DeviceRules.tags(asked: request.topics, caller: caller, settings: api)
        let language = request.language?.lowercased()
        let record = InstallationRecord(
            id: request.id, owner: caller.name, platform: platform, tags: tags, language: language,
            handleDigest: DeviceRules.digest(handle), created: now, refreshed: now,
            templateDigest: templates(platform: platform, language: language).digest)
        return .success((record, handle, ignored))
    }

    /// The template set of a platform's installations in `language` (its body reading
    /// `$(messageParam_<lang>)` when the categories have messages in it), and its digest: what
    /// the index keeps to see that `api.templates` changed since an installation was written.
    public func templates(platform: String, language: String?) -> (
        templates: [String: HubInstallation.Template], digest: String
    ) {
        if let suffix = language.map(DeviceRules.propertySuffix), languages.contains(suffix),
            let set = sets[platform + "/" + suffix]
        {
            return set
        }
        return sets[platform] ?? Self.set(nil, platform: platform, language: nil)
    }

    /// The answer to a registration of `record` when the index holds `found` for its id: the
    /// installation as it is, when the registration changes nothing of it, nothing is owed for
    /// it and it was refreshed within the day; nil: it changes something.
    public static func unchanged(
        _ record: InstallationRecord, ignored: [String], found: (InstallationRecord, owed: Bool)?, now: Date
    ) -> RegistrationOutcome? {
        guard let (current, owed) = found, !owed, current.isSameRegistration(as: record),
            now.timeIntervalSince(current.refreshed) < DeviceSession.refreshInterval
        else { return nil }
        return .registered(current, ignored: ignored)
    }

    private static func set(_ configured: HubInstallation.Template?, platform: String, language: String?) -> (
        templates: [String: HubInstallation.Template], digest: String
    ) {
        var template = configured ?? HubInstallation.Template(body: "")
        if let language {
            template.body = template.body.replacingOccurrences(
                of: "$(messageParam)", with: "$(messageParam_\(language))")
        }
        let set = ["newspush": template]
        let written = HubInstallation(installationId: "", platform: platform, pushChannel: "", tags: [], templates: set)
        return (set, String(Hex.sha256(Data(written.json.utf8)).prefix(32)))
    }
}
