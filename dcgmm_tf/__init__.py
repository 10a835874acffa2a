"""dcgmm_tf: Deep Conditional Gaussian Mixture Models for constrained clustering, in TensorFlow/Keras 3."""

import gc

# Importing TensorFlow, TFP, Keras and scikit-learn creates millions of objects, and Python's cyclic collector,
# triggered by the allocations, walks them again and again: 40 % of the import's CPU time (measured, Python 3.11).
# The collector is paused for the import only and then left as it was.
_collecting = gc.isenabled()
gc.disable()
try:
    from dcgmm_tf.constraints import ConstraintSet, default_alpha
    from dcgmm_tf.estimator import DCGMMClustering
    from dcgmm_tf.model import DCGMM
    from dcgmm_tf.networks import MLPDecoder, MLPEncoder, VGGDecoder, VGGEncoder
    from dcgmm_tf.optimizers import FusedAdam
    from dcgmm_tf.pretraining import pretrain, start_mixture
finally:
    if _collecting:
        gc.enable()
    del _collecting

__version__ = "0.1.0"

__all__ = [
    "DCGMM",
    "DCGMMClustering",
    "ConstraintSet",
    "FusedAdam",
    "MLPDecoder",
    "MLPEncoder",
    "VGGDecoder",
    "VGGEncoder",
    "default_alpha",
    "pretrain",
    "start_mixture",
]
