"""dcgmm_tf: Deep Conditional Gaussian Mixture Models for constrained clustering, in TensorFlow/Keras 3."""

from dcgmm_tf.constraints import ConstraintSet, default_alpha
from dcgmm_tf.estimator import DCGMMClustering
from dcgmm_tf.model import DCGMM
from dcgmm_tf.networks import MLPDecoder, MLPEncoder, VGGDecoder, VGGEncoder
from dcgmm_tf.optimizers import FusedAdam
from dcgmm_tf.pretraining import pretrain, start_mixture

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
