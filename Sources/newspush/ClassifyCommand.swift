import ArgumentParser
import Foundation
import NewsClassifier
import NewsPushCore
import NewsPushModel
import NewsPushSessions

struct Classify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Classify a text or a JSON Lines file of items into the six categories.",
        discussion: """
            Input lines: {"title", "summary", "link", "categories", "feed_category"}; output lines: \
            {"category", "confidence"}. With --train FILE --output PATH, train the text model from \
            labelled lines ({"title", "summary", "label", "source"}) and print its measurements.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "A text to classify.") var text: String?
    @Option(help: "A JSON Lines file of items, or - for stdin.") var input: String?
    @Option(help: "json or jsonl.") var format: Parse.ParseFormat = .jsonl
    @Option(help: "Train the text model from this labelled JSON Lines file.") var train: String?
    @Option(help: "Where --train writes the model.") var output: String?
    @Flag(help: "With --train, measure every training method, not only the chosen one.") var compare = false
    @Option(
        help: "With --train: the distilled encoder's table (tools/classifier/distil.py writes it); trains its head too."
    ) var table: String?
    @Option(help: "With --table: where the encoder's head is written.") var headOutput: String?
    @Option(
        help:
            ArgumentHelp(
                "With --table: the full sentence encoder's weights (tools/classifier/export_encoder.py writes them); "
                    + "trains its head too.")
    )
    var encoder: String?
    @Option(help: "With --encoder: where the full encoder's head is written.") var encoderHeadOutput: String?
    @Option(
        help:
            ArgumentHelp(
                "With --table: fit the weights that add the models' scores on held-out sources (sources) or a "
                    + "random 10 % (random).")
    )
    var weightFit: WeightFitOption = .sources

    enum WeightFitOption: String, ExpressibleByArgument, CustomStringConvertible {
        case sources, random
        var fit: ClassifierTraining.WeightFit { self == .sources ? .heldOutSources : .randomSplit }
        var description: String { self == .sources ? "held-out sources" : "a random 10 %" }
    }

    func validate() throws {
        if train != nil && output == nil { throw ValidationError("--train needs --output") }
        if (table == nil) != (headOutput == nil) { throw ValidationError("--table and --head-output go together") }
        if (encoder == nil) != (encoderHeadOutput == nil) {
            throw ValidationError("--encoder and --encoder-head-output go together")
        }
        if encoder != nil && table == nil {
            throw ValidationError("--encoder needs --table (its WordPiece vocabulary)")
        }
        if train == nil && (text == nil) == (input == nil) { throw ValidationError("give a TEXT or --input FILE") }
        if let text, text.allSatisfy(\.isWhitespace) { throw ValidationError("the TEXT to classify is blank") }
    }

    func run() throws {
        _ = global.bootstrapLogging()
        if let train, let output {
            var request = TrainingRequest(train: train, output: output)
            request.compare = compare
            request.table = zip(table, headOutput).map { ($0, $1) }
            request.encoder = zip(encoder, encoderHeadOutput).map { ($0, $1) }
            request.weightFit = weightFit.fit
            try TrainingSession.train(request) { Terminal.output($0) }
            return
        }
        let session = try ClassifySession()
        if let warning = session.warning { Terminal.error("warning: \(warning)") }
        if let text {
            Terminal.output(Self.json(session.classify(text)))
            return
        }
        let source = input ?? "-"
        let handle = source == "-" ? FileHandle.standardInput : FileHandle(forReadingAtPath: source)
        guard let handle else { throw SessionError.unreadable(path: source, reason: "cannot read the file") }
        // Answers go out a chunk at a time, as they are classified (bounded memory for any file).
        var count = 0, bad = 0
        if format == .json { Terminal.output("[", terminator: "") }
        try session.classify(reading: handle, source: source) { answers in
            let outputs = answers.map { line in
                switch line {
                case .classified(let result): return Self.json(result)
                case .notAnItem(let message, let number):
                    bad += 1
                    return Self.errorJSON(message, line: number)
                }
            }
            let separator = format == .json ? ",\n" : "\n"
            Terminal.output((count == 0 ? "" : separator) + outputs.joined(separator: separator), terminator: "")
            count += answers.count
        }
        Terminal.output(format == .json ? "]" : count == 0 ? "" : "\n", terminator: "")
        if bad > 0 {
            Terminal.error(
                "\(bad) of \(count) line\(count == 1 ? "" : "s") of \(source) could not be classified "
                    + "(an error object stands in their place)"
            )
        }
        try ExitStatus.finish(ExitStatus.code(failures: bad))
    }

    /// `{"error": "…", "line": 3}` in place of a line that is not an item.
    static func errorJSON(_ message: String, line: Int) -> String {
        JSONText.encode(ErrorLine(error: message, line: line), pretty: false)
    }

    struct ErrorLine: Encodable {
        var error: String
        var line: Int
    }

    /// `{"category": "World", "confidence": 0.87}`; the category is always one of the six.
    static func json(_ result: NewsPushModel.Classification) -> String {
        let category = result.category ?? .world
        return String(format: "{\"category\": \"%@\", \"confidence\": %.3f}", category.rawValue, result.confidence)
    }
}

/// Both values, or nil unless both are there.
private func zip<A, B>(_ a: A?, _ b: B?) -> (A, B)? {
    guard let a, let b else { return nil }
    return (a, b)
}
