"""The DC-GMM model: a VAE with a Gaussian-mixture prior trained on the Conditional ELBO."""

from __future__ import annotations

import contextlib
import math
import types
from collections.abc import Iterator, Sequence

import keras
import numpy as np
import tensorflow as tf

from dcgmm_tf import losses, runtime
from dcgmm_tf.config import KL_ESTIMATORS, PAIR_LOSSES
from dcgmm_tf.data.pipeline import batch_from_row, host_tensor
from dcgmm_tf.distribute import is_multi_worker
from dcgmm_tf.networks import MLPDecoder, MLPEncoder
from dcgmm_tf.shims import PrebuiltModel


def _share_of_global_batch(x, terms: dict[str, tf.Tensor]) -> tuple[dict[str, tf.Tensor], int]:
    """Under a multi-replica tf.distribute strategy, ``terms`` times this replica's share B_r / B of the global
    batch, so that the replicas' sum (gradients are summed) is the global batch's value; else ``terms``.

    Also returns the number of replicas R. A replica with an empty batch (B_r = 0) contributes exactly 0.
    """
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return terms, 1
    local = tf.cast(tf.shape(x)[0], tf.float32)
    share = local / context.all_reduce(tf.distribute.ReduceOp.SUM, local)
    return {k: tf.math.multiply_no_nan(v, share) for k, v in terms.items()}, context.num_replicas_in_sync


class CompiledTrackers(keras.Model):
    """A ``keras.Model`` that zeroes and reads its metric trackers in two compiled calls.

    Keras runs both once an epoch as eager ops, one or two per tracker variable: for DC-GMM's four trackers about
    2.5 ms, as much as a few steps of a small network's epoch. The calls, traced once per model, give the same values;
    under a tf.distribute strategy or in a graph Keras' own methods run.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._tracker_functions = None

    def _compiled_trackers(self) -> types.SimpleNamespace | None:
        """The reset and results calls, or None where Keras' own methods run: in a graph, or under a strategy (in
        its scope, or the one the model was made in)."""
        default = not tf.distribute.has_strategy() and self.distribute_strategy is tf.distribute.get_strategy()
        if not (default and tf.executing_eagerly()):
            return None
        if self._tracker_functions is None:
            trackers = self.metrics
            variables = [variable for tracker in trackers for variable in tracker.variables]

            def reset() -> None:
                for variable in variables:
                    variable.assign(tf.zeros(variable.shape, variable.dtype))

            with runtime.no_retracing_warning():  # each model traces its own pair once
                # In a namespace, not a tuple: TensorFlow would track a tuple's functions as the model's own.
                self._tracker_functions = types.SimpleNamespace(
                    reset=tf.function(reset).get_concrete_function(),
                    results=tf.function(lambda: {t.name: t.result() for t in trackers}).get_concrete_function(),
                )
        return self._tracker_functions

    def reset_metrics(self):
        functions = self._compiled_trackers()
        if functions is None:
            return super().reset_metrics()
        functions.reset()

    def get_metrics_result(self):
        functions = self._compiled_trackers()
        return super().get_metrics_result() if functions is None else functions.results()


@keras.saving.register_keras_serializable(package="dcgmm_tf")
class DCGMM(CompiledTrackers, PrebuiltModel):
    """Deep Conditional Gaussian Mixture Model (Manduchi et al., NeurIPS 2021).

    ``fit`` takes batches ``(x, W)`` where ``W`` is the batch's B x B submatrix of the constraint matrix
    (see :func:`dcgmm_tf.data.constrained_dataset`); batches of ``x`` alone train VaDE (W = 0). Inside
    :meth:`batch_source`, it also takes batches as rows of sample indices and W entries, and makes them itself.
    ``predict`` returns the cluster probabilities p(c|x), computed at the embedding mean mu(x).

    Args:
        input_shape: shape of one sample, e.g. ``(784,)``.
        num_clusters: K.
        latent_dim: D (ignored when ``encoder`` is given).
        likelihood: ``"bernoulli"`` for data in [0, 1], ``"gaussian"`` for real-valued features.
        encoder: layer mapping x to ``(mu, log_var)``; default the paper's 500-500-2000 MLP.
        decoder: layer mapping z to the parameters of p(x|z) (see :mod:`dcgmm_tf.networks`).
        num_mc_samples: L, Monte Carlo samples of z per x in the SGVB estimator.
        min_variance: floor of the cluster variances sigma_k^2.
        kl_estimator: ``"sample"`` (the SGVB estimate of Appendix B.3, exact in expectation) or
            ``"analytic"`` (VaDE's and the original code's: the Gaussian expectations over q(z|x) in
            closed form, with p(c|z) taken at the sampled z).
        seed: seed of the reparameterisation noise.
        pair_loss: ``"paper"`` (Eq. 10's -W_ij sum_k p(k|z_i) p(k|z_j)) or ``"likelihood"`` (not the paper's: the
            log-likelihood of each link, :func:`dcgmm_tf.losses.pair_log_likelihood_term`).
        embedding_pair_weight: weight of the pair tuning's contrastive term on the embedding means of each batch's
            linked samples (:func:`dcgmm_tf.losses.batch_embedding_pair_term`; not the paper's), added to the pair
            term and counted in the ``constraint`` metric; 0 (the paper's): none.
    """

    def __init__(
        self,
        input_shape: Sequence[int],
        num_clusters: int = 10,
        latent_dim: int = 10,
        likelihood: str = "bernoulli",
        encoder: keras.layers.Layer | None = None,
        decoder: keras.layers.Layer | None = None,
        num_mc_samples: int = 1,
        min_variance: float = 1e-3,
        kl_estimator: str = "sample",
        seed: int | None = None,
        pair_loss: str = "paper",
        embedding_pair_weight: float = 0.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if likelihood not in losses.LIKELIHOODS:
            raise ValueError(f"likelihood must be one of {losses.LIKELIHOODS}, got {likelihood!r}")
        if num_clusters < 1:
            raise ValueError(f"num_clusters must be at least 1, got {num_clusters}")
        if num_mc_samples < 1:
            raise ValueError(f"num_mc_samples must be at least 1, got {num_mc_samples}")
        if kl_estimator not in KL_ESTIMATORS:
            raise ValueError(f"kl_estimator must be one of {KL_ESTIMATORS}, got {kl_estimator!r}")
        if pair_loss not in PAIR_LOSSES:
            raise ValueError(f"pair_loss must be one of {PAIR_LOSSES}, got {pair_loss!r}")
        self.pair_loss = pair_loss
        if not 0 <= embedding_pair_weight < math.inf:
            raise ValueError(f"embedding_pair_weight must be a finite number >= 0, got {embedding_pair_weight!r}")
        self.embedding_pair_weight = float(embedding_pair_weight)
        self.kl_estimator = kl_estimator
        self.sample_shape = tuple(int(s) for s in input_shape)
        self.num_clusters = int(num_clusters)
        self.likelihood = likelihood
        self.num_mc_samples = int(num_mc_samples)
        self.min_variance = float(min_variance)
        self.seed = seed
        if encoder is None:
            encoder = MLPEncoder(latent_dim, name="encoder")
        if decoder is None:
            decoder = MLPDecoder(int(np.prod(self.sample_shape)), likelihood=likelihood, name="decoder")
        self.encoder = encoder
        self.decoder = decoder
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self.reconstruction_tracker = keras.metrics.Mean(name="reconstruction")
        self.cluster_kl_tracker = keras.metrics.Mean(name="cluster_kl")
        self.constraint_tracker = keras.metrics.Mean(name="constraint")
        self._batch_samples = None  # the data that batches given as rows index (batch_source)
        self.build((None, *self.sample_shape))

    def build(self, input_shape):
        if not self.encoder.built:
            self.encoder.build(input_shape)
        latent_dim = self.encoder.compute_output_spec(keras.KerasTensor(input_shape))[0].shape[-1]
        self.latent_dim = int(latent_dim)
        if not self.decoder.built:
            self.decoder.build((None, self.latent_dim))
        # mu_k and sigma_k^2 = min_variance + exp(raw) (Eq. 1); pi_k = 1/K is fixed (Sec. 2.4).
        # autocast=False: under mixed precision the mixture stays float32 (also inside ``call``).
        self.cluster_means = self.add_weight(
            shape=(self.num_clusters, self.latent_dim),
            name="cluster_means",
            initializer=keras.initializers.RandomNormal(seed=self.seed),
            autocast=False,
        )
        self.cluster_raw_variances = self.add_weight(
            shape=(self.num_clusters, self.latent_dim),
            name="cluster_raw_variances",
            initializer="zeros",
            autocast=False,
        )
        self.built = True

    # ---- parameters -------------------------------------------------------------------------------
    @property
    def cluster_variances(self) -> tf.Tensor:
        """sigma_k^2, shape [K, D], never below ``min_variance``."""
        return self.min_variance + tf.exp(self.cluster_raw_variances)

    def reseed(self, seed: int) -> None:
        """Restarts the model's own generator of the sampling noise (z ~ q(z|x)) from ``seed``."""
        state = self.seed_generator.state
        state.assign(np.array([seed, 0]).astype(state.dtype))

    def set_cluster_parameters(self, means: np.ndarray, variances: np.ndarray) -> None:
        """Set mu_k and sigma_k^2 (e.g. from a Gaussian mixture fitted to the pretrained embeddings)."""
        means = np.asarray(means, np.float32)
        variances = np.asarray(variances, np.float32)
        expected = (self.num_clusters, self.latent_dim)
        if means.shape != expected or variances.shape != expected:
            raise ValueError(
                f"cluster means and variances must have shape {expected}, got {means.shape} and {variances.shape}"
            )
        if not (np.all(np.isfinite(means)) and np.all(np.isfinite(variances)) and np.all(variances > 0)):
            raise ValueError("cluster means must be finite and cluster variances finite and positive")
        self.cluster_means.assign(means)
        self.cluster_raw_variances.assign(np.log(np.maximum(variances - self.min_variance, 1e-6)))

    @property
    def metrics(self):
        return [self.loss_tracker, self.reconstruction_tracker, self.cluster_kl_tracker, self.constraint_tracker]

    # ---- inference --------------------------------------------------------------------------------
    def call(self, x, training=False):
        """p(c|x) at the embedding mean, shape [B, K]."""
        z_mean, _ = self.encoder(x, training=training)
        return tf.exp(self.cluster_log_posterior(z_mean))

    def cluster_log_posterior(self, z: tf.Tensor) -> tf.Tensor:
        """Log p(c|z), shape [..., K]."""
        return losses.cluster_log_posterior(tf.cast(z, tf.float32), self.cluster_means, self.cluster_variances)

    def cluster_probabilities(self, x: np.ndarray, batch_size: int = 1024) -> np.ndarray:
        """p(c|x) of every row of ``x`` [N, K], as ``predict(x, batch_size)`` gives it (bit for bit), a batch at a
        time: ``predict`` first turns all of ``x`` into a dataset, two copies of the data at its peak.

        Under a strategy of several replicas it is ``predict``, which shares the batches out among them (a batch
        handed to all replicas would come back once per replica).
        """
        with runtime.no_retracing_warning():  # each model traces its own predict function once
            if self.distribute_strategy.num_replicas_in_sync > 1:
                return self.predict(x, batch_size=batch_size, verbose=0)
            batches = [self.predict_on_batch(x[s : s + batch_size]) for s in range(0, len(x), batch_size)]
        return np.concatenate(batches or [np.zeros((0, self.num_clusters), np.float32)])

    def embed(self, x, batch_size: int = 1024) -> np.ndarray:
        """The embedding mean mu(x) of each sample, as a float32 numpy array [N, D] (also under mixed precision)."""
        return np.concatenate(
            [
                keras.ops.convert_to_numpy(self.encoder(x[s : s + batch_size])[0]).astype(np.float32)
                for s in range(0, len(x), batch_size)
            ]
        )

    def decode_mean(self, z) -> tf.Tensor:
        """The mean of p(x|z): sigmoid of the logits (Bernoulli) or the Gaussian mean."""
        params = tf.cast(self.decoder(z), tf.float32)
        if self.likelihood == "bernoulli":
            return tf.sigmoid(params)
        return tf.split(params, 2, axis=-1)[0]

    def sample(self, cluster: int, num_samples: int, seed: int | None = None) -> np.ndarray:
        """Generate ``num_samples`` new x from cluster ``cluster``: z ~ N(mu_k, sigma_k^2), x = E[x|z]."""
        if not 0 <= cluster < self.num_clusters:
            raise ValueError(f"cluster must be in [0, {self.num_clusters}), got {cluster}")
        eps = keras.random.normal((num_samples, self.latent_dim), seed=seed)
        z = self.cluster_means[cluster] + tf.sqrt(self.cluster_variances[cluster]) * eps
        return keras.ops.convert_to_numpy(self.decode_mean(z))

    # ---- training ---------------------------------------------------------------------------------
    def compute_loss_terms(self, x, w=None, training: bool = False) -> dict[str, tf.Tensor]:
        """The negative C-ELBO and its terms on one batch (SGVB with L = ``num_mc_samples``)."""
        z_mean, z_log_var = self.encoder(x, training=training)
        z_mean = tf.cast(z_mean, tf.float32)
        z_log_var = tf.cast(z_log_var, tf.float32)
        batch = tf.shape(z_mean)[0]
        eps = self._standard_normal((self.num_mc_samples, batch, self.latent_dim))
        z = z_mean + tf.exp(0.5 * z_log_var) * eps  # [L, B, D], reparameterisation trick
        params = self.decoder(tf.reshape(z, [-1, self.latent_dim]), training=training)
        x_rep = tf.tile(x, tf.concat([[self.num_mc_samples], tf.ones(tf.rank(x) - 1, tf.int32)], 0))
        reconstruction = tf.reduce_mean(losses.reconstruction_nll(x_rep, params, self.likelihood))
        means, variances = self.cluster_means, self.cluster_variances
        log_gamma = losses.cluster_log_posterior(z, means, variances)  # [L, B, K]
        if self.kl_estimator == "analytic":
            cluster_kl = losses.cluster_kl_analytic(log_gamma, z_mean, z_log_var, means, variances)
        else:
            cluster_kl = losses.cluster_kl(z, z_mean, z_log_var, means, variances)
        cluster_kl = tf.reduce_mean(cluster_kl)
        if w is None:
            constraint = tf.zeros(())
        elif self.pair_loss == "likelihood":
            constraint = losses.pair_log_likelihood_term(log_gamma, w)
        else:
            constraint = losses.pairwise_constraint_term(log_gamma, w)
        if w is not None and self.embedding_pair_weight > 0:
            constraint += self.embedding_pair_weight * losses.batch_embedding_pair_term(z_mean, w)
        return {
            "loss": reconstruction + cluster_kl + constraint,
            "reconstruction": reconstruction,
            "cluster_kl": cluster_kl,
            "constraint": constraint,
        }

    def _standard_normal(self, shape) -> tf.Tensor:
        """N(0, 1) noise; under a multi-replica tf.distribute strategy each replica folds its id into the seed."""
        context = tf.distribute.get_replica_context()
        if context is None or context.num_replicas_in_sync == 1:
            return keras.random.normal(shape, seed=self.seed_generator)
        seed = tf.random.experimental.stateless_fold_in(self.seed_generator.next(), context.replica_id_in_sync_group)
        return tf.random.stateless_normal(shape, seed=seed)

    def _update_trackers(self, terms: dict[str, tf.Tensor], num_replicas: int = 1) -> dict[str, tf.Tensor]:
        # Keras averages the replicas' metric results: R times each replica's share sums to the global value.
        for tracker in self.metrics:
            tracker.update_state(terms[tracker.name] * num_replicas)
        results = {m.name: m.result() for m in self.metrics}
        if is_multi_worker(tf.distribute.get_strategy()):
            # Keras averages a multi-worker step's logs with reduce("MEAN", axis=0), which fails on scalars
            # (tensorflow/tensorflow#72388); one-element vectors average to the same scalar.
            results = {name: value[None] for name, value in results.items()}
        return results

    @contextlib.contextmanager
    def batch_source(self, x: np.ndarray) -> Iterator[None]:
        """Within it, the steps take batches given as rows of :func:`dcgmm_tf.data.pipeline.epoch_row_dataset` and
        gather their samples from ``x`` themselves, on the device that holds ``x`` (the host), as part of the
        compiled step: ``fit(epoch_row_dataset(len(x), ...))`` trains exactly as ``fit(constrained_dataset(x,
        ...))``, without tf.data's per-batch work (docs/performance.md). ``x`` must not change meanwhile."""
        self._batch_samples = host_tensor(x)
        try:
            yield
        finally:
            self._batch_samples = None

    def _unpack(self, data):
        if isinstance(data, dict):  # a row of epoch_row_dataset
            if self._batch_samples is None:
                raise ValueError("batches given as rows need the data: fit inside DCGMM.batch_source(x)")
            with tf.device(self._batch_samples.device):
                return batch_from_row(self._batch_samples, data)
        if isinstance(data, (tuple, list)):
            return data[0], (data[1] if len(data) > 1 else None)
        return data, None

    def train_step(self, data):
        x, w = self._unpack(data)
        with tf.GradientTape() as tape:
            terms, num_replicas = _share_of_global_batch(x, self.compute_loss_terms(x, w, training=True))
            loss = self.optimizer.scale_loss(terms["loss"])
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(grads, self.trainable_variables)
        return self._update_trackers(terms, num_replicas)

    def test_step(self, data):
        x, w = self._unpack(data)
        return self._update_trackers(*_share_of_global_batch(x, self.compute_loss_terms(x, w, training=False)))

    def predict_step(self, data):
        x, _ = self._unpack(data)
        return self(x, training=False)

    def get_config(self):
        return {
            **super().get_config(),
            "input_shape": list(self.sample_shape),
            "num_clusters": self.num_clusters,
            "latent_dim": self.latent_dim,
            "likelihood": self.likelihood,
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            "decoder": keras.saving.serialize_keras_object(self.decoder),
            "num_mc_samples": self.num_mc_samples,
            "min_variance": self.min_variance,
            "kl_estimator": self.kl_estimator,
            "seed": self.seed,
            "pair_loss": self.pair_loss,
            "embedding_pair_weight": self.embedding_pair_weight,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        config["decoder"] = keras.saving.deserialize_keras_object(config["decoder"])
        return cls(**config)
