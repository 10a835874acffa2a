"""DC-GMM as a scikit-learn estimator: ``DCGMMClustering(n_clusters=3).fit(X, ml=[(0, 1)], cl=[(0, 2)])``.

The estimator trains through the library calls of the runner's recipe (:func:`dcgmm_tf.training.pretrained_model`,
:func:`dcgmm_tf.pretraining.start_mixture` and :func:`dcgmm_tf.fitting.fit_mixture`: pretraining, the label-free
start from the constraints, the learning-rate schedule, restarts of the mixture), so it gives what
``python -m experiments.run`` gives for the same settings. ``clone``, ``Pipeline`` and ``GridSearchCV`` work as
for any scikit-learn clusterer; the fitted Keras model is ``model_`` (save it with ``model_.save("m.keras")``).
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from dcgmm_tf import training, validation
from dcgmm_tf.callbacks import ClusterRestart
from dcgmm_tf.cluster_init import LINK_START_STRATEGIES, START_STRATEGIES
from dcgmm_tf.config import RunConfig, check_field
from dcgmm_tf.constraints import ConstraintSet, as_constraint_set
from dcgmm_tf.fitting import FitSchedule, fit_mixture
from dcgmm_tf.model import DCGMM
from dcgmm_tf.pretraining import start_mixture

_RUNNER_DEFAULTS = RunConfig.__dataclass_fields__


class DCGMMClustering(ClusterMixin, TransformerMixin, BaseEstimator):
    """Deep Conditional Gaussian Mixture Model: clustering steered by pairwise must-link / cannot-link constraints.

    Args:
      n_clusters: Number of clusters K.
      latent_dim: Dimension of the embedding (``transform`` returns it).
      epochs: Training epochs after pretraining.
      pretrain_epochs: Autoencoder pretraining epochs.
      alpha: Confidence |W_ij| of the pairs given as ``ml`` / ``cl`` (1e4: the paper's hard constraints; for pairs
        that are wrong with probability q, ``dcgmm_tf.default_alpha(q)``). A ``ConstraintSet`` brings its own
        weights.
      batch_size: Training and pretraining batch size.
      learning_rate: Initial Adam learning rate (decayed x0.9 every 20 epochs).
      cluster_init: Start of the mixture, "latent_class", "merge" or "gmm": GMM components grouped by the
        constraints (latent_class, merge) or the paper's GMM.
      likelihood: Decoder likelihood, "auto", "bernoulli" or "gaussian"; "auto": Bernoulli when all of X is in
        [0, 1], else Gaussian.
      random_state: Seed (int, RandomState instance or None) of the initialisation, pretraining, start and
        batches.
      verbose: Keras progress output: 0 silent, 1 progress bar, 2 one line per epoch.

    Attributes:
      model_: The trained Keras model (a ``dcgmm_tf.DCGMM``).
      labels_: Cluster of each training sample, shape (n_samples,).
      constraints_: The ``dcgmm_tf.ConstraintSet`` the model was trained with.
      history_: Per-epoch values of each loss term.
      likelihood_: The decoder likelihood used.
      n_features_in_: Number of features seen in ``fit``.
    """

    def __init__(
        self,
        n_clusters: int = 10,
        *,
        latent_dim: int = 10,
        epochs: int = 100,
        pretrain_epochs: int = 10,
        alpha: float = 1e4,
        batch_size: int = 256,
        learning_rate: float = 1e-3,
        cluster_init: str = "latent_class",
        likelihood: str = "auto",
        random_state: Any = None,
        verbose: int = 0,
    ):
        self.n_clusters = n_clusters
        self.latent_dim = latent_dim
        self.epochs = epochs
        self.pretrain_epochs = pretrain_epochs
        self.alpha = alpha
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.cluster_init = cluster_init
        self.likelihood = likelihood
        self.random_state = random_state
        self.verbose = verbose

    def fit(
        self, X: Any, y: Any = None, *, ml: Any = None, cl: Any = None, constraints: ConstraintSet | None = None
    ) -> DCGMMClustering:
        """Trains on ``X`` with must-links ``ml`` and cannot-links ``cl`` (index pairs into ``X``, confidence
        ``alpha``) or a ``ConstraintSet`` with per-pair weights; without constraints it is VaDE. ``y`` is ignored."""
        del y
        X = validate_data(self, X, dtype=[np.float64, np.float32], ensure_min_samples=2)
        x = X.astype(np.float32)
        constraints = as_constraint_set(len(x), ml, cl, constraints, weight=self.alpha)
        if self.likelihood not in ("auto", "bernoulli", "gaussian"):
            raise ValueError(f"likelihood must be 'auto', 'bernoulli' or 'gaussian', got {self.likelihood!r}")
        if not isinstance(self.n_clusters, numbers.Integral) or not 2 <= self.n_clusters <= len(x):
            raise ValueError(f"n_clusters must be an integer in [2, n_samples={len(x)}], got {self.n_clusters!r}")
        self.likelihood_ = self.likelihood
        if self.likelihood == "auto":
            self.likelihood_ = "bernoulli" if x.min() >= 0 and x.max() <= 1 else "gaussian"
        seed = self.random_state
        if not isinstance(seed, numbers.Integral):
            seed = int(check_random_state(seed).randint(np.iinfo(np.int32).max))
        seed = int(seed)
        for name in ("seed", "epochs", "pretrain_epochs", "batch_size", "learning_rate", "latent_dim"):
            value = seed if name == "seed" else getattr(self, name)
            check_field(name, value, _RUNNER_DEFAULTS[name].metadata)  # the runner's rules
        if self.cluster_init not in START_STRATEGIES:
            raise ValueError(f"cluster_init must be one of {list(START_STRATEGIES)}, got {self.cluster_init!r}.")
        x = validation.check_data(x, num_clusters=self.n_clusters, likelihood=self.likelihood_, name="X")

        def build(model_seed: int) -> DCGMM:
            return DCGMM(
                (x.shape[1],),
                num_clusters=self.n_clusters,
                latent_dim=self.latent_dim,
                likelihood=self.likelihood_,
                seed=model_seed,
            )

        # The library calls of the runner's recipe (dcgmm_tf.training.train_dcgmm), with the runner's defaults.
        model = training.pretrained_model(
            build,
            x,
            seed=seed,
            epochs=self.pretrain_epochs,
            batch_size=self.batch_size,
            name="estimator",
            cache_dir=None,
            verbose=self.verbose,
        )
        start_mixture(model, x, self.cluster_init, constraints, seed=seed)
        callbacks = []
        if self.cluster_init in LINK_START_STRATEGIES and len(constraints) > 0:
            callbacks.append(
                ClusterRestart(x, constraints, _RUNNER_DEFAULTS["restart_every"].default, self.cluster_init, seed=seed)
            )
        schedule = FitSchedule(self.epochs, batch_size=self.batch_size, seed=seed, learning_rate=self.learning_rate)
        self.history_ = fit_mixture(model, x, constraints, schedule, callbacks, verbose=self.verbose)
        self.model_, self.constraints_ = model, constraints
        self.labels_ = self._probabilities(x).argmax(-1)
        return self

    def _probabilities(self, x: np.ndarray) -> np.ndarray:
        return self.model_.predict(x, batch_size=1024, verbose=0)

    def _fitted_input(self, X: Any) -> np.ndarray:
        check_is_fitted(self)
        return validate_data(self, X, dtype=[np.float64, np.float32], reset=False).astype(np.float32)

    def predict_proba(self, X: Any) -> np.ndarray:
        """p(c|x) for each sample and cluster, shape (n_samples, n_clusters)."""
        return self._probabilities(self._fitted_input(X))

    def predict(self, X: Any) -> np.ndarray:
        """The most probable cluster of each sample."""
        return self.predict_proba(X).argmax(-1)

    def transform(self, X: Any) -> np.ndarray:
        """The embedding means mu(x), shape (n_samples, latent_dim)."""
        x = self._fitted_input(X)
        return self.model_.embed(x)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True  # bit-identical refits need TensorFlow's op determinism (process-wide)
        return tags
