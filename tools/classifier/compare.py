#!/usr/bin/env python3
"""The measurement behind README "The sentence encoder beside the bag of words": (a) the full
encoder's mean-pooled vectors against (b) the distilled table's, each with the same
class-balanced logistic layer, beside a word-pair TF-IDF logistic model, on a random 10 % split
and with each source held out. Offline only (numpy and scipy; about 8 minutes on 2 cores):

    python3 tools/classifier/compare.py ../shared/classify/train.jsonl

Columns printed: tfidf, table, full, tfidf+table, tfidf+full, all three (probabilities
averaged), each accuracy / macro-F1.
"""
import json
import os
import re
import struct
import sys
import time
from collections import Counter

import numpy as np
import scipy.optimize
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import distil  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
MAX_TOKENS = 128
K = 6   # the six categories


def full_vectors(texts, work):
    model = distil.fetch_model(work)
    vocab_list = [l.rstrip("\n") for l in open(os.path.join(model, "vocab.txt"), encoding="utf-8")]
    vocab = {t: i for i, t in enumerate(vocab_list)}
    t = distil.load_safetensors(os.path.join(model, "model.safetensors"))

    seqs = []
    for text in texts:
        tokens = distil.tokenize(text, vocab)[:MAX_TOKENS - 2]
        seqs.append([vocab["[CLS]"]] + [vocab[x] for x in tokens] + [vocab["[SEP]"]])
    out = np.zeros((len(texts), 384), np.float32)
    by_length = {}
    for i, s in enumerate(seqs):
        by_length.setdefault(len(s), []).append(i)
    start = time.time()
    for _, idx in sorted(by_length.items()):
        for b in range(0, len(idx), 256):
            chunk = idx[b:b + 256]
            out[chunk] = distil.encode(np.array([seqs[i] for i in chunk]), t, dtype=np.float32)
    print(f"full encoder: {len(texts)} texts in {time.time() - start:.0f} s", file=sys.stderr)
    return out


def static_vectors(texts):
    b = open(os.path.join(ROOT, 'Sources/NewsClassifier/Resources/token-table.bin'), 'rb').read()
    n, d = struct.unpack('<II', b[8:16]); bl = struct.unpack('<I', b[16:20])[0]
    vocab_list = b[20:20+bl].decode().split('\n'); off = 20 + bl + ((-bl) % 4)
    w = np.frombuffer(b[off:off+4*n], '<f4'); off += 4*n
    sc = np.frombuffer(b[off:off+4*n], '<f4'); off += 4*n
    codes = np.frombuffer(b[off:off+n*d], np.int8).reshape(n, d)
    rows = codes.astype(np.float32) * sc[:, None]
    vocab = {t: i for i, t in enumerate(vocab_list)}
    out = np.zeros((len(texts), d), np.float32)
    for i, tx in enumerate(texts):
        ids = [vocab[t] for t in distil.tokenize(tx, vocab)]
        if ids:
            ww = w[ids]; out[i] = (rows[ids] * ww[:, None]).sum(0) / max(ww.sum(), 1e-9)
    return out

def tfidf(texts):
    tok = [re.findall(r"[a-z0-9']+", t.lower()) for t in texts]
    feats = []
    for ws in tok:
        f = set(ws) | {a + ' ' + b for a, b in zip(ws, ws[1:])}
        feats.append(f)
    from collections import Counter
    df = Counter(x for f in feats for x in f)
    keep = {x: i for i, x in enumerate(k for k, v in df.items() if v >= 2)}
    rows, cols, vals = [], [], []
    N = len(texts)
    for r, f in enumerate(feats):
        ids = [keep[x] for x in f if x in keep]
        v = np.array([np.log(N / df_) for df_ in [df[x] for x in f if x in keep]]) if ids else np.array([])
        if len(ids): v = v / np.linalg.norm(v)
        rows += [r] * len(ids); cols += ids; vals += list(v)
    return sp.csr_matrix((vals, (rows, cols)), shape=(N, len(keep)))

def fit_lr(X, yy, l2):
    """The class-balanced, L2-regularised logistic layer's weights (D × K) and biases (K)."""
    counts = np.bincount(yy, minlength=K); cw = len(yy) / (K * np.maximum(counts, 1)); sw = cw[yy]
    D = X.shape[1]; Y = np.eye(K)[yy]
    def f(wb):
        W = wb[:D*K].reshape(D, K); b = wb[D*K:]
        Z = X @ W + b; Z -= Z.max(1, keepdims=True); P = np.exp(Z); P /= P.sum(1, keepdims=True)
        loss = -(sw * np.log(P[np.arange(len(yy)), yy] + 1e-12)).sum() / sw.sum() + l2 * (W * W).sum()
        G = (P - Y) * sw[:, None] / sw.sum()
        gW = X.T @ G + 2 * l2 * W; gb = G.sum(0)
        return loss, np.concatenate([np.asarray(gW).ravel(), gb])
    r = scipy.optimize.minimize(f, np.zeros(D*K+K), jac=True, method='L-BFGS-B', options={'maxiter': 400})
    return r.x[:D*K].reshape(D, K), r.x[D*K:]

def train_lr(X, yy, l2):
    W, b = fit_lr(X, yy, l2)
    return lambda Xt: (lambda Z: np.exp(Z - Z.max(1, keepdims=True)) / np.exp(Z - Z.max(1, keepdims=True)).sum(1, keepdims=True))(Xt @ W + b)

def metrics(P, yy):
    pred = P.argmax(1); acc = (pred == yy).mean()
    f1 = []
    for k in range(K):
        tp = ((pred == k) & (yy == k)).sum(); fp = ((pred == k) & (yy != k)).sum(); fn = ((pred != k) & (yy == k)).sum()
        if tp + fn == 0: continue
        f1.append(2*tp / max(2*tp + fp + fn, 1))
    return acc, np.mean(f1)

def std(X):
    X = X - X.mean(0); return X / (np.linalg.norm(X, axis=1, keepdims=True) + 1e-9)



def main():
    items = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
    labels = sorted({it["label"] for it in items})
    y = np.array([labels.index(it["label"]) for it in items])
    src = np.array([it["source"] for it in items])
    texts = [it["title"] + " " + it.get("summary", "") for it in items]
    full = std(full_vectors(texts, os.path.join(ROOT, ".build/minilm")))
    stat = std(static_vectors(texts))
    T = tfidf(texts)
    rng = np.random.default_rng(7)
    perm = rng.permutation(len(y))
    test_rand = np.zeros(len(y), bool)
    test_rand[perm[:len(y) // 10]] = True
    splits = [("random", test_rand)] + [(s, src == s) for s in sorted(set(src))]
    for name, te in splits:
        tr = ~te
        Pt = train_lr(T[tr], y[tr], 1e-5)(T[te])
        Ps = train_lr(stat[tr], y[tr], 1e-4)(stat[te])
        Pf = train_lr(full[tr], y[tr], 1e-4)(full[te])
        r = [metrics(P, y[te]) for P in (Pt, Ps, Pf, (Pt + Ps) / 2, (Pt + Pf) / 2, (Pt + Ps + Pf) / 3)]
        print(f"{name:28s} " + "  ".join(f"{a:.3f}/{f:.3f}" for a, f in r), flush=True)
    print("columns: tfidf, table, full, tfidf+table, tfidf+full, all three")


if __name__ == "__main__":
    main()
