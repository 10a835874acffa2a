"""Benchmarks (scripts, not tests): see docs/performance.md."""

import atexit
import gc

# As in experiments/__init__.py: the process's last cyclic collection (~2.5 s over TensorFlow's objects) is skipped.
atexit.register(gc.freeze)
