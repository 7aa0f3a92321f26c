#!/usr/bin/env python3
"""Fine-tunes all-MiniLM-L6-v2 end to end for newspush's six sections (docs/classifier.md).

The offline step (Python and PyTorch here only; the built binary reads the weights this
writes, in the eight-bit format of export_encoder.py). The network is the same forward pass as
distil.encode (six BERT layers, mean pooling over the real tokens), and the classification
layer sits on the pooled vector scaled to length one, exactly as the Swift `EncoderHead` does,
so the layer trained here is the layer the binary runs.

    finetune.py experiment --train train.jsonl --out .build/finetune [--candidate full|frozenN] [--encoder-lr R]
        trains one model per held-out source and one on a random 90 % (each evaluated after
        every epoch on what it did not see) and writes the out-of-fold scores for combine.py;
    finetune.py final --train train.jsonl --epochs N --out .build/finetune/final.pt
        trains on everything for N epochs (chosen by the experiment) and writes the weights.

Class-balanced cross-entropy, AdamW (encoder 3e-5, layer 2e-3), linear warm-up and decay,
batches of 32 texts of similar length, at most 128 tokens ([CLS] + 126 + [SEP], as the binary).
Deterministic for a seed on one thread count.
"""
import argparse
import hashlib
import json
import math
import os
import re
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402
import distil  # noqa: E402

LABELS = ["World", "Politics", "Business", "Technology", "Science", "Sports"]
MAX_TOKENS = 128
HEADS, HEAD_SIZE, LAYERS = 12, 32, 6


# --- data ---

def load_items(path, vocab):
    return load_items_from([json.loads(line) for line in open(path, encoding="utf-8")], vocab)


def load_items_from(records, vocab):
    items = []
    for item in records:
        text = item["title"] + " " + item.get("summary", "")
        tokens = distil.tokenize(text, vocab)[:MAX_TOKENS - 2]
        ids = [vocab["[CLS]"]] + [vocab[t] for t in tokens] + [vocab["[SEP]"]]
        items.append({"ids": ids, "label": LABELS.index(item["label"]), "source": item["source"], "title": item["title"]})
    return items


def in_random_test(item):
    """The random 10 %: a hash of the title, so every tool draws the same split."""
    return int(hashlib.sha256(item["title"].encode("utf-8")).hexdigest()[:8], 16) % 10 == 0


def batches(items, size, shuffle, generator=None):
    """Batches of similar length (little padding); shuffled batch order when training."""
    order = sorted(range(len(items)), key=lambda i: len(items[i]["ids"]))
    chunks = [order[i:i + size] for i in range(0, len(order), size)]
    if shuffle:
        chunks = [chunks[i] for i in torch.randperm(len(chunks), generator=generator).tolist()]
    for chunk in chunks:
        length = max(len(items[i]["ids"]) for i in chunk)
        ids = torch.zeros((len(chunk), length), dtype=torch.long)
        mask = torch.zeros((len(chunk), length), dtype=torch.bool)
        for row, i in enumerate(chunk):
            seq = items[i]["ids"]
            ids[row, :len(seq)] = torch.tensor(seq)
            mask[row, :len(seq)] = True
        labels = torch.tensor([items[i]["label"] for i in chunk])
        yield chunk, ids, mask, labels


# --- the network: distil.encode in PyTorch, with padding masked out ---

class Encoder(torch.nn.Module):
    def __init__(self, tensors):
        super().__init__()
        self.p = torch.nn.ParameterDict()
        for name, value in tensors.items():
            if name.startswith("embeddings.position_ids"):
                continue
            self.p[name.replace(".", "__")] = torch.nn.Parameter(torch.tensor(np.array(value, dtype=np.float32)))

    def w(self, name):
        return self.p[name.replace(".", "__")]

    def forward(self, ids, mask):
        batch, length = ids.shape
        x = self.w("embeddings.word_embeddings.weight")[ids] + self.w("embeddings.position_embeddings.weight")[:length][None] \
            + self.w("embeddings.token_type_embeddings.weight")[0][None, None]
        x = F.layer_norm(x, (x.shape[-1],), self.w("embeddings.LayerNorm.weight"), self.w("embeddings.LayerNorm.bias"), 1e-12)
        bias = torch.zeros((batch, 1, 1, length))
        bias.masked_fill_(~mask[:, None, None, :], float("-inf"))
        for i in range(LAYERS):
            p = f"encoder.layer.{i}."

            def dense(v, name):
                return F.linear(v, self.w(p + name + ".weight"), self.w(p + name + ".bias"))

            def split(v):
                return v.view(batch, length, HEADS, HEAD_SIZE).transpose(1, 2)

            q, k, v = split(dense(x, "attention.self.query")), split(dense(x, "attention.self.key")), split(dense(x, "attention.self.value"))
            scores = q @ k.transpose(-1, -2) / math.sqrt(HEAD_SIZE) + bias
            context = (scores.softmax(-1) @ v).transpose(1, 2).reshape(batch, length, HEADS * HEAD_SIZE)
            x = F.layer_norm(dense(context, "attention.output.dense") + x, (x.shape[-1],),
                             self.w(p + "attention.output.LayerNorm.weight"), self.w(p + "attention.output.LayerNorm.bias"), 1e-12)
            h = F.gelu(dense(x, "intermediate.dense"))
            x = F.layer_norm(dense(h, "output.dense") + x, (x.shape[-1],),
                             self.w(p + "output.LayerNorm.weight"), self.w(p + "output.LayerNorm.bias"), 1e-12)
        m = mask[:, :, None].float()
        return (x * m).sum(1) / m.sum(1)

    def numpy_tensors(self):
        return {name.replace("__", "."): value.detach().numpy().astype(np.float64) for name, value in self.p.items()}


class Classifier(torch.nn.Module):
    """The encoder and the layer on its unit vector (what `EncoderHead.scores` computes)."""

    def __init__(self, tensors):
        super().__init__()
        self.encoder = Encoder(tensors)
        self.layer = torch.nn.Linear(384, len(LABELS))
        torch.nn.init.zeros_(self.layer.weight)
        torch.nn.init.zeros_(self.layer.bias)

    def forward(self, ids, mask):
        return self.layer(F.normalize(self.encoder(ids, mask), dim=-1))


def freeze(model, layers):
    """Partly frozen: the embeddings and the first `layers` layers keep their weights."""
    for name, parameter in model.encoder.p.items():
        real = name.replace("__", ".")
        if real.startswith("embeddings.") or any(real.startswith(f"encoder.layer.{i}.") for i in range(layers)):
            parameter.requires_grad_(False)


# --- training and measuring ---

def class_weights(items):
    counts = np.bincount([it["label"] for it in items], minlength=len(LABELS)).astype(np.float64)
    return torch.tensor(len(items) / (len(LABELS) * np.maximum(counts, 1)), dtype=torch.float32)


def scores(model, items, size=64):
    model.eval()
    out = np.zeros((len(items), len(LABELS)), np.float32)
    with torch.no_grad():
        for chunk, ids, mask, _ in batches(items, size, shuffle=False):
            out[chunk] = model(ids, mask).numpy()
    model.train()
    return out


def measure(logits, items):
    truth = np.array([it["label"] for it in items])
    guess = logits.argmax(1)
    f1 = []
    for c in range(len(LABELS)):
        tp = np.sum((guess == c) & (truth == c))
        fp = np.sum((guess == c) & (truth != c))
        fn = np.sum((guess != c) & (truth == c))
        if tp + fn == 0:
            continue
        f1.append(0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn))
    return float(np.mean(guess == truth)), float(np.mean(f1))


def frozen_layers(candidate):
    """`full` trains every layer; `frozenN` keeps the embeddings and the first N layers."""
    match = re.fullmatch(r"full|frozen([0-5])", candidate)
    if match is None:
        raise SystemExit(f"unknown candidate {candidate!r}: full or frozen0 to frozen5")
    return int(match.group(1) or 0)


def run_name(args):
    """The candidate, its encoder learning rate when it is not the default, and -lpft when the
    layer starts from the linear probe."""
    name = args.candidate if args.encoder_lr == 3e-5 else f"{args.candidate}-lr{args.encoder_lr:g}"
    return name + ("-lpft" if args.probe_first else "")


def unit_vectors(encoder, items):
    """The encoder's pooled vectors of `items`, scaled to length one (what a head reads)."""
    out = np.zeros((len(items), 384), np.float32)
    with torch.no_grad():
        for chunk, ids, mask, _ in batches(items, 64, shuffle=False):
            out[chunk] = F.normalize(encoder(ids, mask), dim=-1).numpy()
    return out


def fit_probe(model, train_items, l2=1e-4):
    """The linear probe (what today's head is: compare.py's class-balanced, L2-regularised
    logistic layer on the frozen encoder's unit vectors), set as the layer's start (LP-FT:
    fine-tuning from a trained layer distorts the pretrained features less, Kumar et al. 2022)."""
    model.eval()
    vectors = unit_vectors(model.encoder, train_items)
    model.train()
    w, b = compare.fit_lr(vectors, np.array([it["label"] for it in train_items]), l2)
    with torch.no_grad():
        model.layer.weight.copy_(torch.tensor(w.T / 20.0, dtype=torch.float32))
        model.layer.bias.copy_(torch.tensor(b / 20.0, dtype=torch.float32))


def train(train_items, tensors, epochs, seed, frozen_layers, evaluate=None, log=print, encoder_lr=3e-5,
          probe_first=False):
    torch.manual_seed(seed)
    model = Classifier(tensors)
    if frozen_layers:
        freeze(model, frozen_layers)
    curve = []
    if probe_first:
        fit_probe(model, train_items)
        entry = {"epoch": 0} | (evaluate(model) if evaluate is not None else {})
        curve.append(entry)
        log(f"  probe: {json.dumps(entry)}")
    encoder_params = [p for p in model.encoder.parameters() if p.requires_grad]
    # From a trained probe the layer moves as slowly as the encoder (LP-FT); from zero it learns fast.
    optimizer = torch.optim.AdamW([{"params": encoder_params, "lr": encoder_lr, "weight_decay": 0.01},
                                   {"params": model.layer.parameters(), "lr": encoder_lr if probe_first else 2e-3,
                                    "weight_decay": 0.0}])
    steps = epochs * math.ceil(len(train_items) / 32)
    warmup = max(1, int(0.06 * steps))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warmup, max(0.0, (steps - s) / max(1, steps - warmup))))
    weights = class_weights(train_items)
    generator = torch.Generator().manual_seed(seed)
    step, started = 0, time.time()
    for epoch in range(1, epochs + 1):
        total = 0.0
        for _, ids, mask, labels in batches(train_items, 32, shuffle=True, generator=generator):
            # The layer sees unit vectors: a scale of 20 lets its logits reach useful sizes at
            # the start (folded into the exported weights).
            loss = F.cross_entropy(model(ids, mask) * 20.0, labels, weight=weights)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            total += loss.item()
            step += 1
            if step % 100 == 0:
                log(f"  step {step}/{steps}, loss {total / (step - (epoch - 1) * math.ceil(len(train_items) / 32)):.4f}, "
                    f"{time.time() - started:.0f} s")
        entry = {"epoch": epoch, "seconds": round(time.time() - started)}
        if evaluate is not None:
            entry.update(evaluate(model))
        curve.append(entry)
        log(f"  epoch {epoch}: {json.dumps(entry)}")
    return model, curve


def model_tensors(work):
    model = distil.fetch_model(work)
    vocab_list = [line.rstrip("\n") for line in open(os.path.join(model, "vocab.txt"), encoding="utf-8")]
    return {t: i for i, t in enumerate(vocab_list)}, distil.load_safetensors(os.path.join(model, "model.safetensors"))


def experiment(args):
    vocab, tensors = model_tensors(args.work)
    items = load_items(args.train, vocab)
    os.makedirs(args.out, exist_ok=True)
    frozen = frozen_layers(args.candidate)
    name_of_run = run_name(args)
    folds = [("random", [it for it in items if not in_random_test(it)], [it for it in items if in_random_test(it)])]
    for source in sorted({it["source"] for it in items}):
        folds.append((source, [it for it in items if it["source"] != source], [it for it in items if it["source"] == source]))
    if args.only:
        folds = [f for f in folds if f[0] in args.only.split(",")]
    for name, train_items, test_items in folds:
        path = os.path.join(args.out, f"{name_of_run}-{name}.json")
        if os.path.exists(path):
            print(f"{path} exists; skipped", file=sys.stderr)
            continue
        print(f"== {name_of_run}, held out {name}: train {len(train_items)}, test {len(test_items)}", file=sys.stderr)
        per_epoch = []

        def evaluate(model):
            logits = scores(model, test_items)
            per_epoch.append(logits)
            accuracy, macro = measure(logits, test_items)
            return {"accuracy": round(accuracy, 4), "macro_f1": round(macro, 4)}

        _, curve = train(train_items, tensors, args.epochs, args.seed, frozen, evaluate,
                         log=lambda s: print(s, file=sys.stderr, flush=True), encoder_lr=args.encoder_lr,
                         probe_first=args.probe_first)
        record = {"candidate": name_of_run, "held_out": name, "curve": curve,
                  "titles": [it["title"] for it in test_items], "labels": [it["label"] for it in test_items],
                  "epochs": [entry["epoch"] for entry in curve], "scores": [np.round(l, 5).tolist() for l in per_epoch]}
        with open(path, "w", encoding="utf-8") as out:
            json.dump(record, out)


def final(args):
    vocab, tensors = model_tensors(args.work)
    items = load_items(args.train, vocab)
    model, _ = train(items, tensors, args.epochs, args.seed, frozen_layers(args.candidate),
                     log=lambda s: print(s, file=sys.stderr, flush=True), encoder_lr=args.encoder_lr,
                     probe_first=args.probe_first)
    torch.save({"encoder": model.encoder.numpy_tensors(),
                "layer_weight": model.layer.weight.detach().numpy().astype(np.float64) * 20.0,
                "layer_bias": model.layer.bias.detach().numpy().astype(np.float64) * 20.0,
                "epochs": args.epochs, "candidate": run_name(args)}, args.out)
    print(f"wrote {args.out}", file=sys.stderr)


def check(args):
    """The PyTorch forward pass against distil.encode (the reference the Swift tests use)."""
    vocab, tensors = model_tensors(args.work)
    texts = ["Zelensky makes first front-line trip to Kharkiv", "Markets fell sharply on Wednesday", ""]
    encoder = Encoder(tensors)
    seqs = [[vocab["[CLS]"]] + [vocab[t] for t in distil.tokenize(t, vocab)] + [vocab["[SEP]"]] for t in texts]
    length = max(map(len, seqs))
    ids = torch.zeros((len(seqs), length), dtype=torch.long)
    mask = torch.zeros((len(seqs), length), dtype=torch.bool)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.tensor(s)
        mask[i, :len(s)] = True
    with torch.no_grad():
        padded = encoder(ids, mask).numpy()
    for i, s in enumerate(seqs):
        alone = distil.encode(np.array([s]), tensors)[0]
        cosine = float(padded[i] @ alone / np.linalg.norm(padded[i]) / np.linalg.norm(alone))
        print(f"{texts[i]!r}: cosine {cosine:.7f}, max difference {np.abs(padded[i] - alone).max():.2e}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("experiment", "final", "check"):
        p = sub.add_parser(name)
        p.add_argument("--train", default=os.path.join(os.path.dirname(__file__), "../../../shared/classify/train.jsonl"))
        p.add_argument("--work", default=".build/minilm")
        p.add_argument("--candidate", default="full", help="full, or frozenN: the embeddings and the first N layers kept")
        p.add_argument("--encoder-lr", type=float, default=3e-5)
        p.add_argument("--probe-first", action="store_true", help="start the layer from the linear probe (LP-FT)")
        p.add_argument("--epochs", type=int, default=3)
        p.add_argument("--seed", type=int, default=7)
        p.add_argument("--threads", type=int, default=0)
        p.add_argument("--out", default=".build/finetune")
        p.add_argument("--only", default="")
    args = parser.parse_args()
    frozen_layers(args.candidate)  # (an unknown candidate refused before the model loads)
    if args.threads:
        torch.set_num_threads(args.threads)
    {"experiment": experiment, "final": final, "check": check}[args.command](args)


if __name__ == "__main__":
    main()
