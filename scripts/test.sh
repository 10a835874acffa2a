#!/usr/bin/env bash
# Sets up .venv and runs the test suite: the fast tests by default, the slow ones (end-to-end trainings and
# command lines, marked `slow`) with --slow. Other arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
marker="not slow"
if [[ "${1:-}" == "--slow" ]]; then
  shift
  marker="slow"
fi
.venv/bin/python -m pytest -q -n 2 --dist loadgroup -m "$marker" tests studies/tests "$@"  # two workers; an xdist_group stays on one
