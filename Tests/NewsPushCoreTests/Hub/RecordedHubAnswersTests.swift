import Foundation
import NewsPushTesting
import NotificationHubs
import Testing

/// The hub client's reading of answers the real service gave (Fixtures/hub-answers, each with
/// its source): the message carries the service's own words, whether they came in the `<Error>`
/// body or only in the status line, and each is a fault of the hub or of one push as it means.
struct RecordedHubAnswersTests {
    struct Answer: Decodable {
        var name: String
        var source: String
        var status: Int
        var reason: String
        var headers: [String: String]
        var body: String
        var words: String
        var concernsHub: Bool
        var cancel: String?
    }

    /// A transport that answers every request with one recorded answer.
    struct Recorded: HubTransport {
        let answer: Answer
        func perform(_ request: HubRequest) -> Result<HubResponse, HubTransportError> {
            .success(
                HubResponse(
                    status: answer.status, headers: answer.headers, body: Data(answer.body.utf8), reason: answer.reason)
            )
        }
    }

    static func answers() throws -> [Answer] {
        let url = try #require(
            Bundle.module.url(forResource: "Fixtures/hub-answers/recorded", withExtension: "json"), "fixture missing")
        return try JSONDecoder().decode([Answer].self, from: Data(contentsOf: url))
    }

    func client(_ answer: Answer) throws -> NotificationHubClient {
        NotificationHubClient(
            connection: try HubConnectionString(parsing: testConnectionString), hubName: "breaking-news",
            transport: Recorded(answer: answer),
            retryPolicy: RetryPolicy(maxRetries: 0, baseDelay: 0, maxDelay: 0, jitter: 0, sleep: { _ in }))
    }

    @Test func everyRecordedAnswerIsReadAsTheServiceMeansIt() throws {
        let answers = try Self.answers()
        #expect(answers.count >= 6)
        for answer in answers {
            let client = try client(answer)
            let request = try client.templateRequest(properties: ["messageParam": "x"], tags: "World")
            let outcome = client.send(request)
            #expect(outcome.failureReason?.contains(answer.words) == true, "\(answer.name): \(outcome)")
            #expect(outcome.concernsHub == answer.concernsHub, "\(answer.name): \(outcome)")
            if answer.cancel == "hubNotFound" {
                #expect(client.cancelScheduled(id: "NH-1") == .hubNotFound, "\(answer.name)")
            }
        }
    }
}
