#!/usr/bin/env bash
# Sets up .venv and runs the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Two workers share the tests (an xdist_group stays on one). Each worker's TensorFlow runs its ops on one thread
# (an intra-op pool per worker the size of the machine oversubscribes the cores; docs/performance.md); a test or
# a runner that sets its own thread count still does.
TF_NUM_INTRAOP_THREADS=${TF_NUM_INTRAOP_THREADS:-1} .venv/bin/python -m pytest -q -n 2 --dist loadgroup tests "$@"
