import NotificationHubs

/// How the emulator routes a send: the client's parsed tag expression, evaluated against each
/// virtual device's tags.
public typealias TagPredicate = TagExpression.Node

extension TagExpression.Node {
    /// Parses (and checks) an expression as the service would before routing it.
    public init(parsing expression: String) throws(HubError) {
        self = try TagExpression.parse(expression)
    }
}
