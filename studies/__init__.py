"""Studies of the estimator's defaults: absl programs that measure the library on many data sets.

They use the library (and ``experiments.results``' CSV helpers); nothing in ``dcgmm_tf`` or ``experiments`` imports
them. See studies/README.md.
"""

import atexit
import gc

# As in experiments/__init__.py: the process's last cyclic collection (~2.5 s over TensorFlow's objects) is skipped.
atexit.register(gc.freeze)
