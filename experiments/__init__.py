"""The runners: absl programs that turn flags into a config and call the library."""

import atexit
import gc

# A runner's process ends after its results are written and closed. Python's last cyclic collection would then
# walk TensorFlow's millions of objects for ~2.5 s (measured, 2-core machine); frozen, they are left to the OS.
atexit.register(gc.freeze)
