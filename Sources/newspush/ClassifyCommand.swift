import ArgumentParser
import Foundation
import NewsPushCore

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
    @Option(help: "With --train: the distilled encoder's table (tools/classifier/distil.py writes it); trains its head too.") var table: String?
    @Option(help: "With --table: where the encoder's head is written.") var headOutput: String?
    @Option(help: "With --table: the full sentence encoder's weights (tools/classifier/export_encoder.py writes them); trains its head too.")
    var encoder: String?
    @Option(help: "With --encoder: where the full encoder's head is written.") var encoderHeadOutput: String?
    @Option(help: "With --table: fit the weights that add the models' scores on held-out sources (sources) or a random 10 % (random).")
    var weightFit: WeightFitOption = .sources

    enum WeightFitOption: String, ExpressibleByArgument, CustomStringConvertible {
        case sources, random
        var fit: ClassifierTraining.WeightFit { self == .sources ? .heldOutSources : .randomSplit }
        var description: String { self == .sources ? "held-out sources" : "a random 10 %" }
    }

    func validate() throws {
        if train != nil && output == nil { throw ValidationError("--train needs --output") }
        if (table == nil) != (headOutput == nil) { throw ValidationError("--table and --head-output go together") }
        if (encoder == nil) != (encoderHeadOutput == nil) { throw ValidationError("--encoder and --encoder-head-output go together") }
        if encoder != nil && table == nil { throw ValidationError("--encoder needs --table (its WordPiece vocabulary)") }
        if train == nil && (text == nil) == (input == nil) { throw ValidationError("give a TEXT or --input FILE") }
        if let text, text.allSatisfy(\.isWhitespace) { throw ValidationError("the TEXT to classify is blank") }
    }

    func run() throws {
        _ = global.bootstrapLogging()
        if let train, let output {
            let examples: [ClassifierTraining.Example]
            do { examples = try ClassifierTraining.load(path: train) } catch {
                Terminal.error("\(error.localizedDescription)")
                throw ExitCode(1)
            }
            // Every method is measured the same way; the chosen one is trained on everything.
            let methods = compare ? ClassifierTraining.Method.all : [ClassifierTraining.Method.chosen]
            // One bag-of-words model per split, however many measurements ask for it.
            let textModels = ClassifierTraining.TextModels()
            for method in methods {
                Terminal.output("== \(method.name)")
                for evaluation in ClassifierTraining.measurements(examples, method: method, textModels: textModels) { Terminal.output(evaluation.description) }
            }
            if let table, let headOutput {
                let tokenTable: TokenTable
                var encoders: [(name: String, encoder: any TextEncoder, head: String)] = []
                do {
                    tokenTable = try TokenTable(serialized: try Data(contentsOf: URL(fileURLWithPath: table)))
                    encoders.append(("distilled encoder", tokenTable, headOutput))
                } catch {
                    Terminal.error("\(table): \(error)")
                    throw ExitCode(1)
                }
                if let encoder, let encoderHeadOutput {
                    do {
                        let full = try SentenceEncoder(encoder: TransformerEncoder(serialized: try Data(contentsOf: URL(fileURLWithPath: encoder))), table: tokenTable)
                        let started = Date()
                        let precomputed = ClassifierTraining.Precomputed(full, examples: examples)
                        Terminal.output(String(format: "full encoder: %d texts encoded in %.1f s on %d cores (%@)", examples.count,
                                               Date().timeIntervalSince(started), ProcessInfo.processInfo.activeProcessorCount, SentenceEncoder.backend))
                        encoders.append(("full sentence encoder", precomputed, encoderHeadOutput))
                    } catch {
                        Terminal.error("\(encoder): \(error)")
                        throw ExitCode(1)
                    }
                }
                for (name, textEncoder, headPath) in encoders {
                    Terminal.output("== bag of words + \(name) (weights fitted on \(weightFit.description))")
                    for evaluation in ClassifierTraining.measurements(examples, encoder: textEncoder, fit: weightFit.fit, textModels: textModels) {
                        Terminal.output(evaluation.description)
                    }
                    let combined = ClassifierTraining.trainCombined(examples, encoder: textEncoder, fit: weightFit.fit, textModels: textModels)
                    try combined.encoder!.head.serialized().write(to: URL(fileURLWithPath: headPath))
                    Terminal.output(String(format: "head trained on %d examples written to %@ (weights: bag of words %.2f, %@ %.2f)",
                                           examples.count, headPath, combined.encoder!.head.textWeight, name, combined.encoder!.head.encoderWeight))
                }
                // (The same model both heads were fitted beside.)
                try textModels.model(examples).serialized().write(to: URL(fileURLWithPath: output))
                Terminal.output("bag-of-words model trained on \(examples.count) examples written to \(output)")
                return
            }
            try ClassifierTraining.train(examples).serialized().write(to: URL(fileURLWithPath: output))
            Terminal.output("model (\(ClassifierTraining.Method.chosen.name)) trained on \(examples.count) examples written to \(output)")
            return
        }
        let textClassifier: TextClassifier
        do {
            let (bundled, warning) = try TextClassifier.bundled()
            if let warning { Terminal.error("warning: \(warning)") }
            textClassifier = bundled
        } catch {
            Terminal.error("\(error)")
            throw ExitCode(1)
        }
        let classifier = ItemClassifier(text: textClassifier)
        if let text {
            let result = classifier.classify(FeedItem(title: text), feedCategory: nil)
            Terminal.output(Self.json(result))
            return
        }
        let data = input == "-" ? FileHandle.standardInput.readDataToEndOfFile() : FileManager.default.contents(atPath: input!)
        guard let data else {
            Terminal.error("\(input!): cannot read the file")
            throw ExitCode(1)
        }
        // One output line per input line, in order: a line that is not an item gets an error
        // object in its place, so the answers still line up with the questions.
        var lines = data.split(separator: 0x0A, omittingEmptySubsequences: false)
        if lines.last?.isEmpty == true { lines.removeLast() }   // the newline that ends the file
        var outputs: [String] = []
        var bad = 0
        for (number, line) in lines.enumerated() {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                  let title = object["title"] as? String, !title.allSatisfy(\.isWhitespace) else {
                bad += 1
                let what = line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) ? "an empty line" : "not a JSON object with a title"
                outputs.append(Self.errorJSON("\(input!):\(number + 1): \(what)", line: number + 1))
                continue
            }
            var item = FeedItem(title: title, link: object["link"] as? String, summary: object["summary"] as? String,
                                categories: object["categories"] as? [String] ?? [])
            item.id = nil
            let feedCategory = (object["feed_category"] as? String).flatMap(NewsCategory.init(rawValue:))
            outputs.append(Self.json(classifier.classify(item, feedCategory: feedCategory)))
        }
        Terminal.output(format == .json ? "[" + outputs.joined(separator: ",\n") + "]" : outputs.joined(separator: "\n"))
        if bad > 0 {
            Terminal.error("\(bad) of \(lines.count) line\(lines.count == 1 ? "" : "s") of \(input!) could not be classified (an error object stands in their place)")
            throw ExitCode(2)
        }
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
    static func json(_ result: Classification) -> String {
        let category = result.category ?? .world
        return String(format: "{\"category\": \"%@\", \"confidence\": %.3f}", category.rawValue, result.confidence)
    }
}
