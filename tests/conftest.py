"""Settings of the test processes: one TensorFlow thread each.

`scripts/test.sh` runs the suite in two processes (pytest-xdist) on a two-core machine. The tests train tiny models,
whose cost is TensorFlow's tracing and set-up rather than arithmetic, so a second thread per process only competes
with the other process for the cores (the suite ran 3 % faster with one, two test files 16 %: docs/performance.md).
The variables are read when TensorFlow starts: in each test process and in the subprocesses that tests start. A run
that asks for its own thread count (`--threads`) still gets it.
"""

import os

for _name in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_name, "1")


# The test files whose tests take longest (about 10-30 s each: processes, a browser, whole runs) go first, so that
# the two workers of scripts/test.sh share them from the start and the suite does not end on one long test.
FIRST = ("test_multiworker.py", "test_reliability.py", "test_labelling.py", "test_bench.py", "test_cli.py")


def pytest_collection_modifyitems(items):
    """Runs the tests of ``FIRST`` before the others (the same order in every worker, as pytest-xdist needs)."""
    rank = {name: n for n, name in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(FIRST)))
