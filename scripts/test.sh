#!/usr/bin/env bash
# Sets up .venv and runs the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m pytest -q -n 2 --dist loadgroup tests "$@"  # two workers sharing the tests; an xdist_group stays on one
