import Foundation
import NewsClassifier
import NewsPushCore
import NewsPushModel

/// What `classify --train` is asked to do.
public struct TrainingRequest: Sendable {
    /// The labelled JSON Lines file.
    public var train: String
    /// Where the bag-of-words model is written.
    public var output: String
    /// Measure every training method, not only the chosen one.
    public var compare = false
    /// The distilled encoder's table, and where its head is written.
    public var table: (path: String, headOutput: String)?
    /// The full sentence encoder's weights, and where its head is written (needs `table`).
    public var encoder: (path: String, headOutput: String)?
    /// How the weights that add the models' scores are fitted.
    public var weightFit: ClassifierTraining.WeightFit = .heldOutSources

    /// Training from `train` into `output`.
    public init(train: String, output: String) {
        self.train = train
        self.output = output
    }
}

/// Classifier training as a session: measures each method on the splits (every source held out
/// in turn, and a random 10 %), then trains on everything and writes the models. `say` is told
/// each measurement as it comes (training takes minutes).
public enum TrainingSession {
    /// Trains and writes the models of `request`.
    public static func train(_ request: TrainingRequest, say: (String) -> Void) throws(SessionError) {
        let examples: [ClassifierTraining.Example]
        do { examples = try ClassifierTraining.load(path: request.train) } catch {
            throw .unreadable(path: request.train, reason: error.localizedDescription)
        }
        // Every method is measured the same way; the chosen one is trained on everything.
        let methods = request.compare ? ClassifierTraining.Method.all : [ClassifierTraining.Method.chosen]
        // One bag-of-words model per split, however many measurements ask for it.
        let textModels = ClassifierTraining.TrainedModels()
        for method in methods {
            say("== \(method.name)")
            for evaluation in ClassifierTraining.measurements(examples, method: method, textModels: textModels) {
                say(evaluation.description)
            }
        }
        guard let table = request.table else {
            try write(ClassifierTraining.train(examples).serialized(), to: request.output)
            say(
                "model (\(ClassifierTraining.Method.chosen.name)) trained on \(examples.count) examples written to "
                    + "\(request.output)"
            )
            return
        }
        for (name, encoder, headPath) in try encoders(request, table: table, examples: examples, say: say) {
            let fit = request.weightFit == .heldOutSources ? "held-out sources" : "a random 10 %"
            say("== bag of words + \(name) (weights fitted on \(fit))")
            for evaluation in ClassifierTraining.measurements(
                examples, encoder: encoder, fit: request.weightFit, textModels: textModels)
            {
                say(evaluation.description)
            }
            let head = ClassifierTraining.trainHeadCombined(
                examples, encoder: encoder, fit: request.weightFit, textModels: textModels)
            try write(head.serialized(), to: headPath)
            say(
                String(
                    format: "head trained on %d examples written to %@ (weights: bag of words %.2f, %@ %.2f)",
                    examples.count, headPath, head.textWeight, name, head.encoderWeight))
        }
        // (The same model both heads were fitted beside.)
        try write(textModels.model(examples).serialized(), to: request.output)
        say("bag-of-words model trained on \(examples.count) examples written to \(request.output)")
    }

    /// The encoders to train heads for: the distilled table, and the full encoder when given
    /// (its vectors computed once for every training text).
    private static func encoders(
        _ request: TrainingRequest, table: (path: String, headOutput: String),
        examples: [ClassifierTraining.Example],
        say: (String) -> Void
    ) throws(SessionError) -> [(String, any TextEncoder, String)] {
        let tokenTable: TokenTable
        do { tokenTable = try TokenTable(serialized: try Data(contentsOf: URL(fileURLWithPath: table.path))) } catch {
            throw .unreadable(path: table.path, reason: "\(error)")
        }
        var encoders: [(String, any TextEncoder, String)] = [("distilled encoder", tokenTable, table.headOutput)]
        guard let encoder = request.encoder else { return encoders }
        let full: SentenceEncoder
        do {
            full = try SentenceEncoder(
                encoder: TransformerEncoder(serialized: try Data(contentsOf: URL(fileURLWithPath: encoder.path))),
                table: tokenTable)
        } catch {
            throw .unreadable(path: encoder.path, reason: "\(error)")
        }
        let started = Date()
        let precomputed = ClassifierTraining.Precomputed(full, examples: examples)
        say(
            String(
                format: "full encoder: %d texts encoded in %.1f s on %d cores (%@)", examples.count,
                Date().timeIntervalSince(started), ProcessInfo.processInfo.activeProcessorCount, SentenceEncoder.backend
            ))
        encoders.append(("full sentence encoder", precomputed, encoder.headOutput))
        return encoders
    }

    private static func write(_ data: Data, to path: String) throws(SessionError) {
        do { try data.write(to: URL(fileURLWithPath: path)) } catch {
            throw .cannotWrite(path: path, reason: SystemErrors.reason(error))
        }
    }
}
