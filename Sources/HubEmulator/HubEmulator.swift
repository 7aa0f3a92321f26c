import Crypto
import Foundation
import NotificationHubs

/// The emulated hub: verifies SAS tokens like the service, routes sends by tag expression to
/// virtual devices, renders templates and registration headers, honours expiry, holds
/// scheduled sends until their time, answers telemetry from its deliveries, logs every
/// delivery and injects faults on request.
public actor HubEmulator {
    /// The connection string whose key signs the requests it accepts.
    public let connection: HubConnectionString
    /// The virtual devices (the file's and the installations'), policies and tier.
    public internal(set) var registry: DeviceRegistry
    /// The devices of the devices file.
    let fileDevices: [VirtualDevice]
    /// The installations put through the installations API, by id.
    var installations: [String: Installation] = [:]
    /// Installations changed since the registry's devices were last made.
    var devicesStale = false
    var faults: [Fault] = []
    /// Draws the faults that apply by chance (seeded, so a test that fails replays).
    var random = SeededGenerator(seed: 1)
    /// Installations that are off the network, and for how long after each send.
    var offlineInstallations: [String: Double] = [:]
    /// Requests come in, by format (`installation` for the installations API).
    var requestCounts: [String: Int] = [:]
    /// When each installation write of the last second came in (a `per_second` fault's rate).
    var recentWrites: [Date] = []
    var deliveries: [Delivery] = []
    var notifications: [String: NotificationRecord] = [:]
    var scheduled: [String: Task<Void, Never>] = [:]
    var sendCount = 0
    var telemetryAsked: [String: Int] = [:]
    /// How far the emulator's clock is ahead of the wall clock (EmulatorClock.swift).
    var clockOffset: TimeInterval = 0
    var waiters: [UInt64: Waiter] = [:]
    var nextWaiter: UInt64 = 0
    /// Told when something starts waiting on the clock (`untilSomethingWaits`).
    var waitingWatchers: [CheckedContinuation<Void, Never>] = []
    /// Requests and timers running (not waiting for a time to come).
    var busy = 0
    var settleWaiters: [CheckedContinuation<Void, Never>] = []
    /// The address the server listens on (`127.0.0.1:PORT`): a token signed for it is good too.
    var ownAddress: String?
    let log: FileHandle?
    let encoder: JSONEncoder
    /// The time part of notification ids, made once rather than per send.
    let idTimeFormatter: DateFormatter = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMddHHmmssSSS"
        return formatter
    }()

    /// `logPath`: JSON Lines file that every delivery is appended to.
    public init(connection: HubConnectionString, registry: DeviceRegistry, logPath: String?) throws {
        self.connection = connection
        self.registry = registry
        self.fileDevices = registry.devices
        if let logPath {
            let exists =
                FileManager.default.fileExists(atPath: logPath)
                || FileManager.default.createFile(atPath: logPath, contents: nil)
            guard exists, let handle = FileHandle(forWritingAtPath: logPath) else {
                throw DeviceRegistry.LoadError(description: "\(logPath): cannot open the delivery log for writing")
            }
            handle.seekToEndOfFile()
            log = handle
        } else {
            log = nil
        }
        encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    }

    /// Every delivery so far.
    public func allDeliveries() -> [Delivery] { deliveries }

    /// What the hub knows about a notification (or a scheduled one), as telemetry reports it.
    public func notification(_ id: String) -> NotificationRecord? { notifications[id] }

    /// How many times telemetry was asked for notification `id`.
    public func telemetryRequests(for id: String) -> Int { telemetryAsked[id, default: 0] }

    /// Tells the emulator the port it listens on.
    public func listening(on port: Int) { ownAddress = "127.0.0.1:\(port)" }

    /// Queues a fault for the next send requests (its `seed`, when given, restarts the
    /// generator its `chance` is drawn from).
    public func inject(_ fault: Fault) {
        if let seed = fault.seed { random = SeededGenerator(seed: seed) }
        faults.append(fault)
    }

    /// Takes installation `id` off the network for `seconds` from each send (as a phone that
    /// is off): what reaches it arrives when it is back, unless it expired meanwhile.
    public func takeOffline(installation id: String, seconds: Double) {
        offlineInstallations[id] = seconds
        devicesStale = true
    }

    /// Drops every queued fault.
    public func clearFaults() { faults.removeAll() }

    /// Takes the fault for the next send request, if one is queued (control requests take none).
    public func nextFault(for request: EmulatorRequest) -> Fault? {
        guard !request.path.hasPrefix("/_emulator/") else { return nil }
        let format =
            request.headers["servicebusnotification-format"]?.lowercased()
            ?? (request.path.contains("/installations/") ? "installation" : nil)
        if let format {
            requestCounts[format, default: 0] += 1
            // Kept only while a fault limits the rate (the emulator is the benchmarks' reference).
            if format == "installation" && request.method != "GET" && faults.contains(where: { $0.perSecond != nil }) {
                recentWrites.append(now())
                _ = writesInLastSecond()  // keeps the list to the last second
            }
        }
        return nextFault(format: format)
    }

    /// How many requests of `format` (`installation`: the installations API) have come in.
    public func requestCount(_ format: String) -> Int { requestCounts[format, default: 0] }

    /// Installation writes (PUT, PATCH, DELETE) in the second before `now`.
    func writesInLastSecond() -> Int {
        let since = now().addingTimeInterval(-1)
        // In order of arrival: the old ones are at the front.
        let old = recentWrites.prefix { $0 < since }.count
        if old > 0 { recentWrites.removeFirst(old) }
        return recentWrites.count
    }

    /// The first queued fault for a request of `format` (a fault without a format takes any;
    /// `installation`: the installations API); one with a `chance` applies to that share of
    /// the requests it could take, drawn from the emulator's seeded generator, and when it does
    /// not, the next fault is asked.
    func nextFault(format: String? = nil) -> Fault? {
        let index = faults.indices.first { index in
            guard faults[index].format == nil || faults[index].format == format else { return false }
            if let rate = faults[index].perSecond, writesInLastSecond() <= rate { return false }
            guard let chance = faults[index].chance else { return true }
            return Double(random.next() % 1_000_000) / 1_000_000 < chance
        }
        guard let index else { return nil }
        let fault = faults[index]
        faults[index].count -= 1
        if faults[index].count <= 0 { faults.remove(at: index) }
        return fault
    }

    /// Handles one HTTP request, with the fault taken for it (a delay before delivery has
    /// already been waited by the server).
    public func handle(_ request: EmulatorRequest, fault: Fault? = nil) -> EmulatorResponse {
        let now = now()
        let trackingId = request.headers["trackingid"] ?? UUID().uuidString.lowercased()
        // Control endpoints for tests and demos.
        if request.path.hasPrefix("/_emulator/") { return control(request) }
        guard let fault else { return route(request, trackingId: trackingId, now: now) }
        var response: EmulatorResponse
        if let status = fault.status {
            response = .xmlError(status, fault.detail ?? "Injected fault \(status)", trackingId: trackingId)
        } else {
            response = route(request, trackingId: trackingId, now: now)
        }
        if let retryAfter = fault.retryAfter { response.headers.append(("Retry-After", retryAfter)) }
        if fault.delayAfterDelivery == true { response.delay = fault.delaySeconds ?? 0 }
        response.drop = fault.drop ?? false
        return response
    }

    /// The service's resources: `POST {hub}/messages`, `POST {hub}/schedulednotifications`,
    /// `DELETE {hub}/schedulednotifications/{id}`, `GET {hub}/messages/{id}` (telemetry).
    func route(_ request: EmulatorRequest, trackingId: String, now: Date) -> EmulatorResponse {
        let segments = request.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        // The service's own words for a path that names no hub or resource (a 404 recorded in
        // MicrosoftDocs/xamarin-docs#3150; Tests/NewsPushCoreTests/Fixtures/hub-answers).
        let notFound = EmulatorResponse.xmlError(
            404, "No service is hosted at the specified address.", trackingId: trackingId)
        guard segments.count >= 2, ["messages", "schedulednotifications", "installations"].contains(segments[1]) else {
            return notFound
        }
        let hub = segments[0]
        // Authentication, as the service: token present, signature, expiry, audience. Against
        // the wall clock, which clients sign with: a test moving the hub's clock on moves what
        // happens inside the hub (delays, schedules, telemetry), not the clients' clocks.
        if let failure = verifyToken(
            request.headers["authorization"], hub: hub, now: Date(), trackingId: trackingId,
            needsSend: segments[1] != "installations")
        {
            return failure
        }
        if let expected = registry.hub, expected.lowercased() != hub.lowercased() {
            return .xmlError(404, "No service is hosted at the specified address.", trackingId: trackingId)
        }
        switch (request.method, segments[1], segments.count) {
        case (_, "installations", 3):
            return installationRoute(request, id: segments[2], trackingId: trackingId, now: now)
        case ("POST", "messages", 2):
            return send(request, hub: hub, trackingId: trackingId, now: now)
        case ("POST", "schedulednotifications", 2), ("DELETE", "schedulednotifications", 3), ("GET", "messages", 3):
            guard registry.tier == .standard else {
                return .xmlError(
                    403, "This feature requires the Standard tier; this hub is \(registry.tier.rawValue)",
                    trackingId: trackingId)
            }
            if request.method == "POST" { return schedule(request, hub: hub, trackingId: trackingId, now: now) }
            if request.method == "DELETE" { return cancel(segments[2], trackingId: trackingId, now: now) }
            return telemetry(segments[2], hub: hub, trackingId: trackingId, now: now)
        default:
            return notFound
        }
    }

    func newNotificationId(_ now: Date) -> String {
        sendCount += 1
        let unique = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        return "NH-\(idTimeFormatter.string(from: now))-\(unique)-\(String(format: "%02d", (sendCount % 99) + 1))"
    }

    func send(_ request: EmulatorRequest, hub: String, trackingId: String, now: Date) -> EmulatorResponse {
        let prepared: PreparedSend
        switch upToDateRegistry().prepare(request, trackingId: trackingId) {
        case .failure(let refusal): return refusal.response
        case .success(let value): prepared = value
        }
        let id = newNotificationId(now)
        let isTest = request.query["test"].map { $0.lowercased() != "false" } ?? false
        notifications[id] = NotificationRecord(
            id: id, hub: hub, host: connection.host, state: "Enqueued", enqueued: now, body: prepared.body,
            tags: prepared.tags, platforms: Set(prepared.targets.map(\.device.platform.rawValue)))
        deliver(prepared.targets, id: id, at: now, ignoringOffline: isTest)
        let apiVersion = request.query["api-version"] ?? "2020-06"
        var headers: [(String, String)] = [
            ("TrackingId", trackingId), ("X-Powered-By", "newspush-hub (Azure Notification Hubs emulator)"),
        ]
        // The service gives a notification id (`Location`) on the Standard tier only (hub-api.md §1).
        if registry.tier == .standard {
            headers.insert(
                ("Location", "https://\(connection.host)/\(hub)/messages/\(id)?api-version=\(apiVersion)"), at: 0)
        }
        if isTest {
            headers.append(("Content-Type", "application/xml; charset=utf-8"))
            return EmulatorResponse(
                status: 201, headers: headers, body: Data(Self.outcomeXML(prepared.targets.map(\.device)).utf8))
        }
        return EmulatorResponse(status: 201, headers: headers, body: Data())
    }

    /// A scheduled send: checked like a send, held until `ServiceBusNotification-ScheduleTime`
    /// (UTC, `yyyy-MM-ddTHH:mm:ss`), then delivered unless cancelled.
    func schedule(_ request: EmulatorRequest, hub: String, trackingId: String, now: Date) -> EmulatorResponse {
        guard let text = request.headers["servicebusnotification-scheduletime"], let time = Self.scheduleTime(text)
        else {
            return .xmlError(
                400, "ServiceBusNotification-ScheduleTime is missing or not yyyy-MM-ddTHH:mm:ss", trackingId: trackingId
            )
        }
        guard time <= now.addingTimeInterval(7 * 86400 + 60) else {
            return .xmlError(400, "Scheduled notifications can be at most 7 days ahead", trackingId: trackingId)
        }
        let prepared: PreparedSend
        switch upToDateRegistry().prepare(request, trackingId: trackingId) {
        case .failure(let refusal): return refusal.response
        case .success(let value): prepared = value
        }
        let id = newNotificationId(now)
        notifications[id] = NotificationRecord(
            id: id, hub: hub, host: connection.host, state: "Scheduled", enqueued: now, body: prepared.body,
            tags: prepared.tags, platforms: Set(prepared.targets.map(\.device.platform.rawValue)))
        startedWork()
        scheduled[id] = Task { [weak self] in
            await self?.sleep(until: time)
            await self?.fire(id, targets: prepared.targets)
        }
        let apiVersion = request.query["api-version"] ?? "2020-06"
        return EmulatorResponse(
            status: 201,
            headers: [
                (
                    "Location",
                    "https://\(connection.host)/\(hub)/schedulednotifications/\(id)?api-version=\(apiVersion)"
                ),
                ("TrackingId", trackingId),
            ], body: Data())
    }

    func fire(_ id: String, targets: [SendTarget]) {
        defer { finishedWork() }
        scheduled[id] = nil
        guard notifications[id]?.state == "Scheduled" else { return }
        deliver(targets, id: id, at: now(), ignoringOffline: false)
    }

    func cancel(_ id: String, trackingId: String, now: Date) -> EmulatorResponse {
        guard let task = scheduled.removeValue(forKey: id) else {
            return .xmlError(
                404, "No scheduled notification '\(id)' (delivered, cancelled, or never scheduled)",
                trackingId: trackingId)
        }
        task.cancel()
        notifications[id]?.state = "Cancelled"
        notifications[id]?.ended = now
        return EmulatorResponse(status: 200, headers: [("TrackingId", trackingId)], body: Data())
    }

    func telemetry(_ id: String, hub: String, trackingId: String, now: Date) -> EmulatorResponse {
        telemetryAsked[id, default: 0] += 1
        guard let record = notifications[id], now.timeIntervalSince(record.enqueued) >= registry.telemetryDelay else {
            return .xmlError(404, "No notification '\(id)' in this hub", trackingId: trackingId)
        }
        return EmulatorResponse(
            status: 200, headers: [("Content-Type", "application/xml; charset=utf-8"), ("TrackingId", trackingId)],
            body: Data(record.detailsXML().utf8))
    }

    /// Hands a notification to its devices now; a device that is off gets it when it comes
    /// online, unless it expired meanwhile (the push service drops it, as APNs and FCM do).
    func deliver(_ targets: [SendTarget], id: String, at now: Date, ignoringOffline: Bool) {
        notifications[id]?.state = targets.isEmpty ? "NoTargetFound" : "Processing"
        notifications[id]?.started = now
        notifications[id]?.waiting = targets.count
        if targets.isEmpty { notifications[id]?.ended = now }
        for target in targets {
            if let offline = target.device.offlineSeconds, offline > 0, !ignoringOffline {
                startedWork()
                Task { [weak self] in
                    await self?.comeOnline(target, id: id, at: now.addingTimeInterval(offline))
                }
            } else {
                arrive(target, id: id, at: now)
            }
        }
    }

    /// A phone that was off gets the notification when it comes back at `time`.
    func comeOnline(_ target: SendTarget, id: String, at time: Date) async {
        await sleep(until: time)
        arrive(target, id: id, at: now())
        finishedWork()
    }

    func arrive(_ target: SendTarget, id: String, at now: Date) {
        let platform = target.device.platform
        if platform == .gcm {
            // Legacy FCM is gone: the hub took the send, the device gets nothing.
            notifications[id]?.count(platform, "PnsUnreachable", at: now)
            return
        }
        if let expiry = target.expiry, expiry < now {
            notifications[id]?.count(platform, "Dropped", at: now)
            return
        }
        let delivery = Delivery(
            device: target.device.id, platform: platform.rawValue, tags: target.device.tags, payload: target.payload,
            notificationId: id, collapseId: target.collapseId, headers: target.headers.isEmpty ? nil : target.headers)
        deliveries.append(delivery)
        if let log, var line = try? encoder.encode(delivery) {
            line.append(0x0A)
            log.write(line)
        }
        notifications[id]?.count(platform, "Success", at: now)
        reportEvents(of: target)
    }

    /// `yyyy-MM-ddTHH:mm:ss` in UTC.
    static func scheduleTime(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss"
        return formatter.date(from: text.trimmingCharacters(in: .whitespaces))
    }

}
