"""dcgmm_tf: Deep Conditional Gaussian Mixture Models for constrained clustering, in TensorFlow/Keras 3.

The public names are imported on first use, so that ``import dcgmm_tf.config`` (settings and flags) loads no
TensorFlow.
"""

from __future__ import annotations

import gc
import importlib
from typing import Any

__version__ = "0.1.0"

_PUBLIC = {
    "DCGMM": "dcgmm_tf.model",
    "DCGMMClustering": "dcgmm_tf.estimator",
    "ConstraintSet": "dcgmm_tf.constraints",
    "FusedAdam": "dcgmm_tf.optimizers",
    "MLPDecoder": "dcgmm_tf.networks",
    "MLPEncoder": "dcgmm_tf.networks",
    "VGGDecoder": "dcgmm_tf.networks",
    "VGGEncoder": "dcgmm_tf.networks",
    "default_alpha": "dcgmm_tf.constraints",
    "pretrain": "dcgmm_tf.pretraining",
    "start_mixture": "dcgmm_tf.pretraining",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    """Imports a public name's module on first use. Importing TensorFlow, TFP, Keras and scikit-learn creates
    millions of objects, and Python's cyclic collector, triggered by the allocations, walks them again and again
    (40 % of the import's CPU time on Python 3.11): the collector is paused for the import and then left as it was."""
    if name not in _PUBLIC:
        raise AttributeError(f"module 'dcgmm_tf' has no attribute {name!r}")
    collecting = gc.isenabled()
    gc.disable()
    try:
        value = getattr(importlib.import_module(_PUBLIC[name]), name)
    finally:
        if collecting:
            gc.enable()
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC])
