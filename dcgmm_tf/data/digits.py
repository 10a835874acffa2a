"""scikit-learn's bundled 8x8 handwritten digits (1,797 images, 10 classes), split 80/20 once for all runs."""

from __future__ import annotations

import numpy as np

from dcgmm_tf.data.dataset import DataSplits


def load_digits() -> DataSplits:
    """The digits as a :class:`DataSplits`: pixels scaled to [0, 1] (Bernoulli likelihood), 1,437 training and 360
    test images, a stratified split fixed by seed 0 (independent of a run's seed, like the other data sets')."""
    from sklearn.datasets import load_digits as sklearn_digits
    from sklearn.model_selection import train_test_split

    x, y = sklearn_digits(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(
        (x / 16.0).astype(np.float32), y.astype(np.int64), test_size=0.2, stratify=y, random_state=0
    )
    return DataSplits(x_train, y_train, x_test, y_test, name="digits", likelihood="bernoulli", image_shape=(8, 8, 1))
