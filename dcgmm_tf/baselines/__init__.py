"""Baselines of the paper's Table 1: PCKmeans, SDEC and C-IDEC (VaDE is DC-GMM without constraints)."""

from dcgmm_tf.baselines.dec import CIDEC, SDEC, ClusteringLayer
from dcgmm_tf.baselines.layerwise import StackedAutoencoder, pretrain_layerwise
from dcgmm_tf.baselines.pckmeans import PCKMeans

__all__ = ["CIDEC", "PCKMeans", "SDEC", "ClusteringLayer", "StackedAutoencoder", "pretrain_layerwise"]
