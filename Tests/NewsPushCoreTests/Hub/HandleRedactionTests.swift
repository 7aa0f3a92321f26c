import Foundation
import NotificationHubs
import Testing

/// A hub's error detail may quote the handle it was sent: what is logged or told to a phone has
/// every handle-shaped string replaced, and keeps the service's own words and TrackingId.
struct HandleRedactionTests {
    @Test func handlesAreReplacedAndTheServicesWordsKept() {
        let apns = String(repeating: "9f2a0b1c", count: 8)
        let fcm = "dG9rZW4tb2YtYS1waG9uZQ:APA91bHq3xZ9kLm7Hq3xZ9kLm2Hq3xZ9kLm1Hq3xZ9kLm0"
        let wns = "https://db5.notify.windows.com/?token=AwYAAAB3q"
        let tracking = "TrackingId:4a8c3e0b-95f1-4d2c-9a7e-0c1b2d3e4f5a_G1,TimeStamp:7/2/2020 6:33:21 PM"
        let cases: [(String, String)] = [
            ("The pushChannel \(apns) is invalid", "The pushChannel [handle] is invalid"),
            ("Registration \(fcm) expired.", "Registration [handle] expired."),
            ("Channel \(wns) gone", "Channel [handle] gone"),
            ("The token has an invalid signature.\(tracking)", "The token has an invalid signature.\(tracking)"),
            (
                "No service is hosted at https://contoso.servicebus.windows.net/hub/messages",
                "No service is hosted at https://contoso.servicebus.windows.net/hub/messages"
            ),
            ("SharedAccessSignatureInvalidAudienceOfTheToken", "SharedAccessSignatureInvalidAudienceOfTheToken"),
        ]
        for (detail, expected) in cases {
            #expect(NotificationHubClient.redactingHandles(detail) == expected, "\(detail)")
        }
    }

    // A WNS channel quoted percent-encoded (as a URL's query or a form carries it), its token
    // split by %2B and %2F: nothing of the token reaches the log (before, the runs between the
    // escapes came through).
    @Test func aPercentEncodedChannelIsReplacedWhole() {
        let token = "AwYAAAB3qK2x%2BxZ9kLm7Hq3%2FyZ8jKn6Gp2wVt5Rs4Qp3Oo2Nn1Mm0Ll9Kk8Jj7Ii6Hh5"
        let encoded = "https%3A%2F%2Fdb5p.notify.windows.com%2F%3Ftoken%3D" + token
        for detail in [
            "The channel \(encoded) expired", "pushChannel=\(encoded)&platform=wns",
            "token%3D\(token) was refused",
        ] {
            let said = NotificationHubClient.redactingHandles(detail)
            #expect(said.contains("[handle]"), "\(said)")
            for fragment in ["AwYAAAB3qK2x", "xZ9kLm7Hq3", "yZ8jKn6Gp2wVt5", "Rs4Qp3Oo2Nn1Mm0Ll9Kk8Jj7"] {
                #expect(!said.contains(fragment), "\(fragment) in \(said)")
            }
        }
    }
}
