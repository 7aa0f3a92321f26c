import Crypto
import Foundation
import NotificationHubs

extension HubEmulator {
    /// The `NotificationOutcome` XML a test send answers with.
    static func outcomeXML(_ devices: [VirtualDevice]) -> String {
        var xml =
            "<NotificationOutcome xmlns=\"http://schemas.microsoft.com/netservices/2010/10/servicebus/connect\" "
            + "xmlns:i=\"http://www.w3.org/2001/XMLSchema-instance\">"
        let legacy = devices.filter { $0.platform == .gcm }.count
        xml += "<Success>\(devices.count - legacy)</Success><Failure>\(legacy)</Failure>"
        if devices.isEmpty {
            xml += "<Results i:nil=\"true\"/>"
        } else {
            xml += "<Results>"
            for device in devices {
                xml +=
                    "<RegistrationResult><ApplicationPlatform>\(device.platform.rawValue)</ApplicationPlatform>"
                    + "<PnsHandle>\(device.id)</PnsHandle><RegistrationId>\(device.id)</RegistrationId><Outcome>"
                    + (device.platform == .gcm
                        ? "The Push Notification System handle for the registration is invalid"
                        : "The Notification was successfully sent to the Push Notification System")
                    + "</Outcome></RegistrationResult>"
            }
            xml += "</Results>"
        }
        return xml + "</NotificationOutcome>"
    }
}
