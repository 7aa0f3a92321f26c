/// What an app says happened to an alert on one phone (SPEC §11).
public enum AlertEventKind: String, Sendable, CaseIterable {
    case received, opened
}
