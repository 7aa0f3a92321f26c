import Foundation
import NewsPushModel
import NotificationHubs

/// The hub client of a newsroom.
public enum HubClients {
    /// The client for the configured hub over libcurl, or over `transport` (tests), retrying as
    /// `hub.retries` and `hub.retry_delay` say (`retrySleep` replaces the waits in tests).
    public static func make(
        _ hub: HubSettings, transport: (any HubTransport)? = nil,
        retrySleep: (@Sendable (Double) -> Void)? = nil
    ) throws(HubError) -> NotificationHubClient {
        let connection = try HubConnectionString(parsing: hub.connectionString)
        let transport =
            transport
            ?? CurlHubTransport(
                userAgent: "newspush/\(NewsPushVersion.current) (NHub/\(hub.apiVersion))", timeout: hub.timeout)
        var retry = RetryPolicy(maxRetries: hub.retries, baseDelay: hub.retryDelay)
        if let retrySleep { retry.sleep = retrySleep }
        return NotificationHubClient(
            connection: connection, hubName: hub.name, endpoint: hub.endpoint,
            apiVersion: hub.apiVersion, transport: transport, retryPolicy: retry)
    }
}
