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
