"""The runners: absl programs that turn flags into a config and call the library."""

import atexit
import gc
import os

# TensorFlow's C++ log before and beside a run (oneDNN and CPU notes, a failed CUDA probe on a machine without a GPU,
# a tf.data graph rewrite under op determinism) asks nothing of the user; failures reach Python as exceptions with
# their message. Set TF_CPP_MIN_LOG_LEVEL (0: all) to see it.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# A runner's process ends after its results are written and closed. Python's last cyclic collection would then
# walk TensorFlow's millions of objects for ~2.5 s (measured, 2-core machine); frozen, they are left to the OS.
atexit.register(gc.freeze)
