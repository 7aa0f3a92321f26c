import Foundation
import NewsPushModel
import Synchronization

/// Training and measuring the text model from a labelled JSON Lines file
/// (`{"title", "summary", "label", "source"}` per line).
public enum ClassifierTraining {
    /// A labelled item.
    public struct Example: Sendable, Hashable {
        /// Its headline.
        public var title: String
        /// Its summary (may be empty).
        public var summary: String
        /// Its label.
        public var category: NewsCategory
        /// The publisher or dataset it came from.
        public var source: String
    }

    /// A way to train a model, compared with the others by `measurements`.
    public struct Method: Sendable, CustomStringConvertible {
        /// The method, in words.
        public var name: String
        /// Trains a model on examples.
        public var train: @Sendable ([Example]) -> TextModel
        /// The method's name.
        public var description: String { name }

        /// Naive Bayes with uniform priors.
        public static let naiveBayes = Method(name: "naive Bayes, words + pairs + title words, uniform priors") {
            TextModel.trainNaiveBayes(labelled($0))
        }
        /// Class-balanced logistic regression (the chosen method).
        public static let logistic = Method(name: "logistic regression, same features, class-balanced") {
            TextModel.trainLogistic(labelled($0))
        }
        /// Logistic regression without class weights.
        public static let logisticUnbalanced = Method(name: "logistic regression, same features, unweighted") {
            TextModel.trainLogistic(labelled($0), balanced: false)
        }

        private static func labelled(_ examples: [Example]) -> [(
            title: String, summary: String, category: NewsCategory
        )] {
            examples.map { ($0.title, $0.summary, $0.category) }
        }
        /// The method the shipped model is trained with, chosen by the figures in the README.
        public static let chosen = logistic
        /// Every method, for `--compare`.
        public static let all = [naiveBayes, logisticUnbalanced, logistic]
    }

    /// How a model did on a held-out set.
    public struct Evaluation: Sendable, CustomStringConvertible {
        /// The held-out set.
        public var name: String
        /// Its size.
        public var count: Int
        /// The share classified right.
        public var accuracy: Double
        /// Mean F1 over the categories present in the evaluated items (a held-out source
        /// without Science items says nothing about Science).
        public var macroF1: Double
        /// F1 per category.
        public var f1: [NewsCategory: Double]
        /// confusion[true][predicted]
        public var confusion: [[Int]]
        /// Share of items at or above the default `policy.min_confidence` (0.5), and the
        /// accuracy among them: what a run without section evidence would push, and how well.
        public var confident: Double
        /// The accuracy among items at or above `min_confidence` 0.5.
        public var confidentAccuracy: Double
        /// Reliability of `confidence`: per band (lower bound), items and how many were right.
        public var bands: [(from: Double, items: Int, correct: Int)] = []

        /// The measurements in a line, then the confusion.
        public var description: String {
            var lines = [
                String(
                    format:
                        "%@ (%d items): accuracy %.3f, macro-F1 %.3f; confidence >= 0.5 for %.1f%% of items, "
                        + "accuracy %.3f among them",
                    name, count, accuracy, macroF1, confident * 100, confidentAccuracy)
            ]
            lines.append(
                "  reliability: "
                    + bands.map { band in
                        String(
                            format: "confidence ≥ %.1f: %d items, accuracy %.3f", band.from, band.items,
                            band.items > 0 ? Double(band.correct) / Double(band.items) : 0)
                    }.joined(separator: "; "))
            lines.append(
                "  F1: "
                    + NewsCategory.allCases.compactMap { c in f1[c].map { String(format: "%@ %.2f", c.rawValue, $0) } }
                    .joined(separator: ", "))
            lines.append("  confusion (rows true, columns predicted):")
            lines.append(
                "  " + "".padding(toLength: 11, withPad: " ", startingAt: 0)
                    + NewsCategory.allCases.map {
                        $0.rawValue.prefix(5).padding(toLength: 7, withPad: " ", startingAt: 0)
                    }.joined())
            for (i, row) in confusion.enumerated() {
                lines.append(
                    "  " + NewsCategory.allCases[i].rawValue.padding(toLength: 11, withPad: " ", startingAt: 0)
                        + row.map { String($0).padding(toLength: 7, withPad: " ", startingAt: 0) }.joined())
            }
            return lines.joined(separator: "\n")
        }
    }

    /// Reads the examples; lines with an unknown label are an error naming the line.
    public static func load(path: String) throws -> [Example] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: path])
        }
        var examples: [Example] = []
        for (number, line) in data.split(separator: 0x0A).enumerated() where !line.isEmpty {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                let label = object["label"] as? String, let category = NewsCategory(rawValue: label)
            else {
                throw CocoaError(
                    .fileReadCorruptFile,
                    userInfo: [NSLocalizedDescriptionKey: "\(path):\(number + 1): not an example with a known label"])
            }
            examples.append(
                Example(
                    title: object["title"] as? String ?? "", summary: object["summary"] as? String ?? "",
                    category: category, source: object["source"] as? String ?? ""))
        }
        return examples
    }

    /// Trains with `method` (the model comes back with the eight-bit weights it is stored with,
    /// so every measurement is of the model that ships).
    public static func train(_ examples: [Example], method: Method = .chosen) -> TextModel {
        method.train(examples)
    }

    /// How the bag-of-words model does on `examples`.
    public static func evaluate(_ model: TextModel, on examples: [Example], name: String) -> Evaluation {
        evaluate(TextClassifier(textModel: model), on: examples, name: name)
    }

    /// How the classifier does on `examples`.
    public static func evaluate(_ model: TextClassifier, on examples: [Example], name: String) -> Evaluation {
        let classes = NewsCategory.allCases
        var confusion = Array(repeating: Array(repeating: 0, count: classes.count), count: classes.count)
        var confident = 0, confidentCorrect = 0
        var bands: [(from: Double, items: Int, correct: Int)] = [(0, 0, 0), (0.5, 0, 0), (0.7, 0, 0), (0.9, 0, 0)]
        for example in examples {
            let result = model.classify(title: example.title, summary: example.summary)
            confusion[example.category.index][result.category.index] += 1
            let band = bands.lastIndex { result.confidence >= $0.from } ?? 0
            bands[band].items += 1
            if result.category == example.category { bands[band].correct += 1 }
            if result.confidence >= 0.5 {
                confident += 1
                if result.category == example.category { confidentCorrect += 1 }
            }
        }
        var f1: [NewsCategory: Double] = [:]
        for (i, category) in classes.enumerated() where confusion[i].reduce(0, +) > 0 {
            let tp = Double(confusion[i][i])
            let fp = Double(classes.indices.reduce(0) { $0 + ($1 == i ? 0 : confusion[$1][i]) })
            let fn = Double(confusion[i].reduce(0, +)) - tp
            let precision = tp + fp > 0 ? tp / (tp + fp) : 0, recall = tp + fn > 0 ? tp / (tp + fn) : 0
            f1[category] = precision + recall > 0 ? 2 * precision * recall / (precision + recall) : 0
        }
        let correct = classes.indices.reduce(0) { $0 + confusion[$1][$1] }
        return Evaluation(
            name: name, count: examples.count, accuracy: Double(correct) / Double(max(1, examples.count)),
            macroF1: f1.values.reduce(0, +) / Double(max(1, f1.count)), f1: f1, confusion: confusion,
            confident: Double(confident) / Double(max(1, examples.count)),
            confidentAccuracy: Double(confidentCorrect) / Double(max(1, confident)), bands: bands)
    }

    /// A random 10 % split (fixed seed), then each source held out in turn (trained on the
    /// other three): the by-source split stands in for tomorrow's news from a new publisher.
    public static func measurements(
        _ examples: [Example], method: Method = .chosen, textModels: TrainedModels = TrainedModels()
    ) -> [Evaluation] {
        measurements(examples) { TextClassifier(textModel: textModels.model($0, method: method)) }
    }

    /// Bag-of-words models by the items they were trained on. Measuring and training with two
    /// encoders asks for the model of the same items many times (each held-out split, and the
    /// splits inside it that fit the weights); training is deterministic, so each is trained
    /// once per `TrainedModels`.
    public final class TrainedModels: Sendable {
        /// Which examples, trained how: the examples themselves, not a hash of them (two sets
        /// that hashed alike would share a model).
        private struct Key: Hashable {
            var method: String
            var examples: [Example]
        }
        private let trained = Mutex<[Key: TextModel]>([:])

        /// No model trained yet.
        public init() {}

        /// The model trained on `examples` with `method` (trained once per set).
        public func model(_ examples: [Example], method: Method = .chosen) -> TextModel {
            let key = Key(method: method.name, examples: examples)
            if let model = trained.withLock({ $0[key] }) { return model }
            let model = train(examples, method: method)
            trained.withLock { $0[key] = model }
            return model
        }
    }

    /// The splits of `measurements`, each trained with `train`.
    static func measurements(_ examples: [Example], train: ([Example]) -> TextClassifier) -> [Evaluation] {
        var generator = SplitMix(seed: 20261122)
        let shuffled = examples.shuffled(using: &generator)
        let cut = shuffled.count / 10
        var results = [evaluate(train(Array(shuffled[cut...])), on: Array(shuffled[..<cut]), name: "random 10% split")]
        for source in Set(examples.map(\.source)).sorted() {
            let held = examples.filter { $0.source == source }
            results.append(
                evaluate(train(examples.filter { $0.source != source }), on: held, name: "held-out source \(source)"))
        }
        return results
    }

    // MARK: With a sentence encoder

    /// How the weights that add the two models' scores are fitted.
    public enum WeightFit: Sendable {
        /// On a random 10 % held out of the training items.
        case randomSplit
        /// On each source's items scored by models trained without that source (when there are
        /// two sources or more): publishers the models have not seen, as in use.
        case heldOutSources
    }

    /// Trains the bag-of-words model and the encoder's head, and fits the weights with which
    /// their scores are added (which also calibrates the confidence) by the log-loss on items
    /// the two were not trained on (`fit`); then both are trained again on everything.
    public static func trainCombined(
        _ examples: [Example], encoder: any TextEncoder, fit: WeightFit = .heldOutSources,
        method: Method = .chosen, textModels: TrainedModels = TrainedModels()
    ) -> TextClassifier {
        let head = trainHeadCombined(examples, encoder: encoder, fit: fit, method: method, textModels: textModels)
        return TextClassifier(textModel: textModels.model(examples, method: method), encoder: (encoder, head))
    }

    /// The encoder's head of `trainCombined`, with the fitted weights.
    public static func trainHeadCombined(
        _ examples: [Example], encoder: any TextEncoder, fit: WeightFit = .heldOutSources,
        method: Method = .chosen, textModels: TrainedModels = TrainedModels()
    ) -> EncoderHead {
        let sources = Set(examples.map(\.source)).sorted()
        var checks: [(fit: [Example], check: [Example])]
        if fit == .heldOutSources, sources.count >= 2 {
            checks = sources.map { source in
                (examples.filter { $0.source != source }, examples.filter { $0.source == source })
            }
        } else {
            var generator = SplitMix(seed: 20261123)
            let shuffled = examples.shuffled(using: &generator)
            let cut = shuffled.count / 10
            checks = [(Array(shuffled[cut...]), Array(shuffled[..<cut]))]
        }
        var scored: [(text: [Float], encoded: [Float], label: Int)] = []
        for (fitted, check) in checks {
            let textModel = textModels.model(fitted, method: method)
            let head = trainHead(fitted, encoder: encoder)
            for example in check {
                scored.append(
                    (
                        textModel.classify(title: example.title, summary: example.summary).scores.map(Float.init),
                        head.scores(encoder.unitVector(example.title + " " + example.summary)),
                        example.category.index
                    ))
            }
        }
        var best = (loss: Float.infinity, text: Float(1), encoder: Float(0))
        // (The bag of words' weight in steps of 0.05: on unseen publishers it earns little.)
        for a in stride(from: Float(0), through: 3, by: 0.05) {
            for b in stride(from: Float(0), through: 6, by: 0.25) where a + b > 0 {
                var loss: Float = 0
                for item in scored {
                    let scores = (0..<item.text.count).map { a * item.text[$0] + b * item.encoded[$0] }
                    let top = scores.max() ?? 0
                    loss -= scores[item.label] - top - log(scores.reduce(0) { $0 + exp($1 - top) })
                }
                if loss < best.loss { best = (loss, a, b) }
            }
        }
        var finalHead = trainHead(examples, encoder: encoder)
        finalHead.textWeight = best.text
        finalHead.encoderWeight = best.encoder
        return finalHead
    }

    static func trainHead(_ examples: [Example], encoder: any TextEncoder) -> EncoderHead {
        EncoderHead.train(
            examples.map { encoder.unitVector($0.title + " " + $0.summary) },
            labels: examples.map { $0.category.index })
    }

    /// `measurements` for the bag-of-words model with the encoder beside it.
    public static func measurements(
        _ examples: [Example], encoder: any TextEncoder, fit: WeightFit = .heldOutSources,
        textModels: TrainedModels = TrainedModels()
    ) -> [Evaluation] {
        measurements(examples) { trainCombined($0, encoder: encoder, fit: fit, textModels: textModels) }
    }

    /// An encoder whose vectors for the training texts were computed once, up front (the full
    /// encoder takes milliseconds per text, and training and measuring ask for each text dozens
    /// of times); other texts go to the encoder itself.
    public struct Precomputed: TextEncoder {
        let vectors: [String: [Float]]
        /// The encoder for texts computed on the way.
        public let base: any TextEncoder

        /// `base` with the vectors of `texts` computed now.
        public init(_ base: any TextEncoder, texts: [String]) {
            let unique = Array(Set(texts)).sorted()
            vectors = Dictionary(uniqueKeysWithValues: zip(unique, base.unitVectors(unique)))
            self.base = base
        }

        /// `base` with the vectors of the examples' texts computed now.
        public init(_ base: any TextEncoder, examples: [Example]) {
            self.init(base, texts: examples.map { $0.title + " " + $0.summary })
        }

        /// The vector computed before, or `base`'s.
        public func unitVector(_ text: String) -> [Float] { vectors[text] ?? base.unitVector(text) }
    }

    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        init(seed: UInt64) { state = seed }
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
}
