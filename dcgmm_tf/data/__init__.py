"""Data sets and tf.data pipelines.

Modules: `dataset` (the `DataSplits` type), `paths` (where files are searched), `registry` (named data sets and
their loaders `mnist`, `reuters`, `stl10`, `utkface`), `npz` and `image_folder` (your own data), `loading`
(`load_dataset`), `splits`, `pipeline` and `features` (what the networks read of an image: pixels or HOG).
Loaders import `dataset`, `paths` and `splits`, never `loading`.
"""

from dcgmm_tf.data.dataset import DataSplits
from dcgmm_tf.data.features import hog_features
from dcgmm_tf.data.loading import load_dataset
from dcgmm_tf.data.mnist import read_idx
from dcgmm_tf.data.pipeline import constrained_dataset, epoch_batches

__all__ = ["DataSplits", "constrained_dataset", "epoch_batches", "hog_features", "load_dataset", "read_idx"]
