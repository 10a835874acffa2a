"""The library's only uses of Keras' and scikit-learn's private methods, each isolated here and checked by
``tests/test_shims.py``, which fails loudly when an upgrade renames them or changes their arguments.

Written for Keras 3.15 and scikit-learn 1.9. Neither library offers a public hook for these two needs:

- :class:`PrebuiltModel`: Keras' ``fit`` builds a model symbolically from its first batch (``_maybe_symbolic_build``),
  which a model built beforehand does not need and which fails under a multi-worker strategy for DC-GMM's batches.
- :class:`EqualWeightGaussianMixture`: scikit-learn's EM always updates the mixture weights; holding them at 1/K
  needs its EM steps (``_initialize``, ``_m_step``).
"""

from __future__ import annotations

import keras
import numpy as np
from sklearn.mixture import GaussianMixture

# The private methods used here and their arguments (self left out), as the test checks them.
PRIVATE_METHODS = {
    (keras.Model, "_maybe_symbolic_build"): ("iterator", "data_batch"),
    (GaussianMixture, "_initialize"): ("X", "resp", "xp"),
    (GaussianMixture, "_m_step"): ("X", "log_resp", "xp"),
}


class PrebuiltModel(keras.Model):
    """A ``keras.Model`` whose ``fit`` skips the symbolic build when the model and its optimizer are built already.

    Under a tf.distribute strategy, Keras' fit takes the first batch and averages it across the replicas to build
    the model symbolically. DC-GMM's replica parts differ in size, and MultiWorkerMirroredStrategy cannot reduce such
    a batch eagerly (it fails in a PyFunc). A built model whose optimizer is built (as fitting.fit_mixture leaves
    them) has nothing to build, so that step is skipped. An optimizer not yet built is built here, eagerly: Keras
    would otherwise create its variables while tracing the first step, and TensorFlow then traces the step a second
    time (about 2 s on a 2-core CPU).
    """

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        if self.built and self.optimizer is not None and self._compile_metrics is None:
            if not self.optimizer.built:
                with self.distribute_strategy.scope():
                    self.optimizer.build(self.trainable_variables)
            return
        super()._maybe_symbolic_build(iterator=iterator, data_batch=data_batch)


class EqualWeightGaussianMixture(GaussianMixture):
    """scikit-learn's ``GaussianMixture`` with its weights held at 1/K: EM updates the means and covariances only.

    DC-GMM's prior keeps pi_k = 1/K (Sec. 2.4), so a candidate K is scored by the mixture of that kind.
    """

    def _initialize(self, *args, **kwargs):
        super()._initialize(*args, **kwargs)
        self.weights_ = np.full(self.n_components, 1.0 / self.n_components)

    def _m_step(self, *args, **kwargs):
        super()._m_step(*args, **kwargs)
        self.weights_ = np.full(self.n_components, 1.0 / self.n_components)
