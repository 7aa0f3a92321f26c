import Foundation

/// What the operating system said, in its own words.
public enum SystemErrors {
    /// The reason behind a failed file operation: the system's message for its errno (`No such
    /// file or directory`) rather than Foundation's wrapper text.
    public static func reason(_ error: any Error) -> String {
        let ns = error as NSError
        if let underlying = ns.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain,
            let code = POSIXErrorCode(rawValue: Int32(underlying.code))
        {
            return String(cString: strerror(code.rawValue))
        }
        return ns.localizedDescription
    }
}
