"""Data sets and tf.data pipelines."""

from dcgmm_tf.data.datasets import Dataset, load_dataset, read_idx
from dcgmm_tf.data.pipeline import constrained_dataset, epoch_batches

__all__ = ["Dataset", "constrained_dataset", "epoch_batches", "load_dataset", "read_idx"]
