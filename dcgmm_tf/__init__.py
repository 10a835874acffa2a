"""dcgmm_tf: Deep Conditional Gaussian Mixture Models for constrained clustering, in TensorFlow/Keras 3."""

from dcgmm_tf.constraints import ConstraintSet, default_alpha
from dcgmm_tf.model import DCGMM
from dcgmm_tf.networks import MLPDecoder, MLPEncoder
from dcgmm_tf.pretraining import pretrain

__version__ = "0.1.0"

__all__ = ["DCGMM", "ConstraintSet", "MLPDecoder", "MLPEncoder", "default_alpha", "pretrain"]
