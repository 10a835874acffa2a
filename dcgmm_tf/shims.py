"""The library's only uses of Keras' and scikit-learn's private methods, each isolated here and checked by
``tests/test_shims.py``, which fails loudly when an upgrade renames them or changes their arguments.

Written for Keras 3.15 and scikit-learn 1.9. Neither library offers a public hook for these needs:

- :class:`PrebuiltModel`: Keras' ``fit`` builds a model symbolically from its first batch (``_maybe_symbolic_build``),
  which a model built beforehand does not need and which fails under a multi-worker strategy for DC-GMM's batches.
- :class:`ScaleWhenClipping`: Keras' ``global_clipnorm`` multiplies every gradient by a scale that is exactly 1 in
  all steps whose norm is under the limit, a pass over the gradients for nothing (``_clip_gradients``).
- :class:`EqualWeightGaussianMixture`: scikit-learn's EM always updates the mixture weights; holding them at 1/K
  needs its EM steps (``_initialize``, ``_m_step``).
- :class:`InPlaceDiagonalGaussianMixture`: scikit-learn's E step of a diagonal mixture allocates a new [N, K'] array
  for each of its operations, which on the starts' 60,000 x 100 responsibilities is most of its time
  (``_estimate_log_prob``, ``_estimate_log_prob_resp``).
"""

from __future__ import annotations

import math

import keras
import numpy as np
import tensorflow as tf
from keras import ops
from sklearn.mixture import GaussianMixture

from dcgmm_tf.log_space import log_sum_exp

# The private methods used here and their arguments (self left out), as the test checks them.
PRIVATE_METHODS = {
    (keras.Model, "_maybe_symbolic_build"): ("iterator", "data_batch"),
    (keras.optimizers.Optimizer, "_clip_gradients"): ("grads",),
    (GaussianMixture, "_initialize"): ("X", "resp", "xp"),
    (GaussianMixture, "_m_step"): ("X", "log_resp", "xp"),
    (GaussianMixture, "_estimate_log_prob"): ("X", "xp"),
    (GaussianMixture, "_estimate_log_prob_resp"): ("X", "xp"),
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


class ScaleWhenClipping:
    """A mixin for a Keras optimizer on the TensorFlow backend: with ``global_clipnorm``, the gradients are
    multiplied by Keras' scale only when it is not exactly 1, so a step whose gradient norm is under the limit skips
    that pass over the gradients; the results are Keras' to the bit (a product with 1.0 is its factor). The norm is
    Keras' own sum of squares. On the paper's 3.4M-parameter network the skipped pass is about half of the
    clipping's time (docs/performance.md).
    """

    def _clip_gradients(self, grads):
        limit = self.global_clipnorm
        if not limit or limit <= 0 or (self.clipnorm and self.clipnorm > 0):  # Keras' order of the clipping options
            return super()._clip_gradients(grads)
        present = [g for g in grads if g is not None]
        norm = ops.sqrt(ops.sum(ops.stack([ops.sum(ops.square(g)) for g in present])))
        # Keras' scale (keras.src.optimizers.base_optimizer.clip_by_global_norm): NaN for a non-finite norm.
        scale = limit * ops.minimum(1.0 / norm, 1.0 / limit) + (norm - norm)
        scaled = iter(tf.cond(ops.equal(scale, 1.0), lambda: list(present), lambda: [g * scale for g in present]))
        return [None if g is None else next(scaled) for g in grads]


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


class InPlaceDiagonalGaussianMixture(GaussianMixture):
    """scikit-learn's ``GaussianMixture(covariance_type="diag")`` whose E step on float64 data runs scikit-learn's
    operations in their order on one [N, K] array, in place: the same fit, responsibilities and predictions to the
    bit (tested against ``GaussianMixture``) in about half the time of an EM step. Other data (float32) and other
    covariance types take scikit-learn's own code.
    """

    def _in_place(self, X) -> bool:
        return self.covariance_type == "diag" and isinstance(X, np.ndarray) and X.dtype == np.float64

    def _estimate_log_prob(self, X, xp=None):
        if not self._in_place(X):
            return super()._estimate_log_prob(X, xp=xp)
        # scikit-learn's log N(x | mu_k, diag(1 / p_k)) = -0.5 (F log 2 pi + sum_f mu^2 p - 2 x . (mu p) + x^2 . p)
        # + sum_f log sqrt(p), with p_k the precisions; its a - 2 b is computed as a + (-2 b), the same number.
        precisions = self.precisions_cholesky_**2
        log_prob = X @ (self.means_ * precisions).T
        log_prob *= -2.0
        np.add(np.sum(self.means_**2 * precisions, axis=1), log_prob, out=log_prob)
        log_prob += X**2 @ precisions.T
        log_prob += X.shape[1] * math.log(2 * math.pi)
        log_prob *= -0.5
        log_prob += np.sum(np.log(self.precisions_cholesky_), axis=1)
        return log_prob

    def _estimate_log_prob_resp(self, X, xp=None):
        if not self._in_place(X):
            return super()._estimate_log_prob_resp(X, xp=xp)
        log_resp = self._estimate_log_prob(X)
        log_resp += np.log(self.weights_)
        log_prob_norm = log_sum_exp(log_resp, axis=1)[:, 0]
        with np.errstate(under="ignore"):
            log_resp -= log_prob_norm[:, None]
        return log_prob_norm, log_resp
