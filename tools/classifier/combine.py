#!/usr/bin/env python3
"""Fine-tuned candidates beside a bag of words: reads the per-epoch logits `finetune.py
experiment` wrote for every split (random 10 % by title hash, and each source held out), trains
the word and word-pair TF-IDF logistic model of compare.py (the offline stand-in for the Swift
bag of words) on the same training part, and prints accuracy / macro-F1 of the fine-tuned model
alone and averaged with the bag of words at a few weights, per candidate, split and epoch.
Offline only (numpy, scipy; about a minute):

    python3 tools/classifier/combine.py ../shared/classify/train.jsonl .build/finetune
"""
import hashlib
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402

WEIGHTS = (1.0, 0.85, 0.75, 0.6)  # the fine-tuned model's share; the bag of words has the rest


def softmax(z):
    z = z - z.max(1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(1, keepdims=True)


def in_random_test(title):
    return int(hashlib.sha256(title.encode("utf-8")).hexdigest()[:8], 16) % 10 == 0


def main():
    items = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
    labels = ["World", "Politics", "Business", "Technology", "Science", "Sports"]  # finetune.py's order
    y = np.array([labels.index(it["label"]) for it in items])
    source = np.array([it["source"] for it in items])
    titles = [it["title"] for it in items]
    words = compare.tfidf([it["title"] + " " + it.get("summary", "") for it in items])
    print("candidate  split                       epoch  " + "  ".join(f"ft {w:.2f}  " for w in WEIGHTS))
    for candidate in ("full", "frozen3"):
        for split in ["random"] + sorted(set(source)):
            path = os.path.join(sys.argv[2], f"{candidate}-{split}.json")
            if not os.path.exists(path):
                continue
            record = json.load(open(path, encoding="utf-8"))
            test = np.array([in_random_test(t) for t in titles]) if split == "random" else source == split
            assert [titles[i] for i in np.flatnonzero(test)] == record["titles"], f"{path}: items differ"
            assert y[test].tolist() == record["labels"], f"{path}: labels differ"
            bag = compare.train_lr(words[~test], y[~test], 1e-5)(words[test])
            for epoch, logits in enumerate(record["scores"], 1):
                tuned = softmax(np.array(logits))
                cells = [compare.metrics(w * tuned + (1 - w) * bag, y[test]) for w in WEIGHTS]
                print(f"{candidate:10s} {split:27s} {epoch:5d}  " + "  ".join(f"{a:.3f}/{f:.3f}" for a, f in cells),
                      flush=True)


if __name__ == "__main__":
    main()
