#!/usr/bin/env python3
"""Fine-tuned candidates against today's model, measured the same way: reads the per-epoch
logits `finetune.py experiment` wrote for every split (random 10 % by title hash, and each
source held out), and prints, per run and epoch, accuracy / macro-F1 on every split and the mean
over the four unseen sources of

- the fine-tuned model alone;
- the fine-tuned model + a bag of words (compare.py's word and word-pair TF-IDF logistic model,
  the offline stand-in for the Swift bag of words, trained on the same part);
- the fine-tuned model + the frozen encoder's layer + the bag of words (an ensemble: with the
  first N layers frozen, the two encoders share them and differ only above);

beside the baseline that is shipped today, computed here by the same protocol: the frozen
encoder's unit vectors with a class-balanced logistic layer, + the same bag of words.

The weights that add the models' scores are fitted as the binary fits them
(ClassifierTraining.trainHeadCombined): by log-loss on items of sources the models did not see,
which also sets the temperature. For a held-out source the fit
uses the other three sources' scores (leave one source out); for the random split all four.
Offline only (numpy, scipy, PyTorch for the frozen vectors, cached; a few minutes):

    python3 tools/classifier/combine.py ../shared/classify/train.jsonl .build/finetune
"""
import glob
import hashlib
import json
import os
import sys

import numpy as np
import scipy.optimize

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402

LABELS = ["World", "Politics", "Business", "Technology", "Science", "Sports"]  # finetune.py's order


def log_softmax(z):
    z = z - z.max(1, keepdims=True)
    return z - np.log(np.exp(z).sum(1, keepdims=True))


def in_random_test(title):
    return int(hashlib.sha256(title.encode("utf-8")).hexdigest()[:8], 16) % 10 == 0


def frozen_vectors(items, cache):
    """The unchanged encoder's unit vectors (what today's head reads), computed once."""
    if os.path.exists(cache):
        return np.load(cache)
    import finetune
    vocab, tensors = finetune.model_tensors(os.path.join(compare.ROOT, ".build/minilm"))
    out = finetune.unit_vectors(finetune.Encoder(tensors), finetune.load_items_from(items, vocab))
    np.save(cache, out)
    return out


def logistic_scores(X, y, test, l2):
    """Scores on `test` of compare.py's logistic layer trained on the rest."""
    w, b = compare.fit_lr(X[~test], y[~test], l2)
    return X[test] @ w + b


def fit_weights(parts, y):
    """Non-negative weights minimising the log-loss of the weighted sum of `parts` (the binary
    searches a grid for its two; a bounded quasi-Newton search finds the same minimum here)."""
    rows = np.arange(len(y))

    def loss(w):
        z = sum(wi * p for wi, p in zip(w, parts))
        logp = log_softmax(z)
        p = np.exp(logp)
        onehot = np.zeros_like(p)
        onehot[rows, y] = 1
        grad = [float(((p - onehot) * part).sum()) for part in parts]
        return -logp[rows, y].sum(), np.array(grad)

    result = scipy.optimize.minimize(loss, np.full(len(parts), 0.5), jac=True, method="L-BFGS-B",
                                     bounds=[(0, None)] * len(parts))
    return result.x


def scored(splits, y, scorers):
    """Per split: metrics of the first scorer alone and of the weighted sum of all, the weights
    fitted on the other sources' rows (all four for the random split)."""
    sources = [name for name, _ in splits if name != "random"]
    results = {}
    for name, test in splits:
        fit_on = [s for s in sources if s != name]
        parts = [np.concatenate([scores[s] for s in fit_on]) for scores in scorers]
        truth = np.concatenate([y[t] for s, t in splits if s in fit_on])
        w = fit_weights(parts, truth)
        results[name] = (compare.metrics(scorers[0][name], y[test]),
                         compare.metrics(sum(wi * scores[name] for wi, scores in zip(w, scorers)), y[test]), w)
    return results


def report(label, results, combined="+ bag of words"):
    unseen = [r for name, r in results.items() if name != "random"]
    for which, title in ((0, "alone"), (1, combined)):
        cells = [f"{results[name][which][0]:.3f}/{results[name][which][1]:.3f}" for name in results]
        mean = (np.mean([r[which][0] for r in unseen]), np.mean([r[which][1] for r in unseen]))
        print(f"{label:28s} {title:15s} " + "  ".join(cells) + f"  | {mean[0]:.3f}/{mean[1]:.3f}", flush=True)
    print(f"{'':28s} {'weights':15s} " + "  ".join(",".join(f"{w:.2f}" for w in r[2]) for r in results.values()))


def main():
    items = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
    folder = sys.argv[2]
    y = np.array([LABELS.index(it["label"]) for it in items])
    source = np.array([it["source"] for it in items])
    titles = [it["title"] for it in items]
    splits = [("random", np.array([in_random_test(t) for t in titles]))] + [(s, source == s) for s in sorted(set(source))]
    words = compare.tfidf([it["title"] + " " + it.get("summary", "") for it in items])
    bag = {name: logistic_scores(words, y, t, 1e-5) for name, t in splits}
    vectors = frozen_vectors(items, os.path.join(folder, "frozen-vectors.npy"))
    head = {name: logistic_scores(vectors, y, t, 1e-4) for name, t in splits}
    print("splits: " + ", ".join(name for name, _ in splits) + " | mean of the unseen sources")
    report("shipped (frozen encoder)", scored(splits, y, [head, bag]))
    runs = sorted({os.path.basename(p)[:-len("-random.json")] for p in glob.glob(os.path.join(folder, "*-random.json"))})
    for run in runs:
        records = {}
        for name, test in splits:
            path = os.path.join(folder, f"{run}-{name}.json")
            if not os.path.exists(path):
                break
            record = json.load(open(path, encoding="utf-8"))
            assert [titles[i] for i in np.flatnonzero(test)] == record["titles"], f"{path}: items differ"
            assert y[test].tolist() == record["labels"], f"{path}: labels differ"
            records[name] = record
        if len(records) < len(splits):
            print(f"{run}: not every split yet; skipped")
            continue
        epochs = records["random"].get("epochs", range(1, len(records["random"]["scores"]) + 1))
        for index, epoch in enumerate(epochs):
            # The layer was trained on 20 × its outputs (finetune.py); the fit absorbs the scale.
            logits = {name: 20.0 * np.array(r["scores"][index]) for name, r in records.items()}
            report(f"{run}, epoch {epoch}" + (" (probe)" if epoch == 0 else ""), scored(splits, y, [logits, bag]))
            report("", scored(splits, y, [logits, head, bag]), "+ frozen + bag")


if __name__ == "__main__":
    main()
