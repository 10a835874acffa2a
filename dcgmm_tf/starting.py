"""The first half of DC-GMM's recipe: the model of a :class:`~dcgmm_tf.config.RunConfig`, its cached autoencoder
pretraining and the start of its mixture (with K chosen from the pairs where the config asks for it).

:mod:`dcgmm_tf.training` then fits the started model; the estimator and the active loop call these functions too.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np

from dcgmm_tf.cluster_count import choose_num_clusters, probe_num_clusters
from dcgmm_tf.config import RunConfig, RuntimeConfig, settings_hash
from dcgmm_tf.constraints import ConstraintSet
from dcgmm_tf.model import DCGMM
from dcgmm_tf.networks import VGGDecoder, VGGEncoder
from dcgmm_tf.pair_tuning import tune_with_pairs
from dcgmm_tf.prepared import PreparedRun, training_pairs
from dcgmm_tf.pretraining import pretrain_checked, start_mixture
from dcgmm_tf.process_state import process_seeds
from dcgmm_tf.storage import array_hash
from dcgmm_tf.trainer_base import cache_folder, cache_note


def make_model(config: RunConfig, input_shape: tuple[int, ...], likelihood: str, num_clusters: int, seed: int) -> DCGMM:
    """The DC-GMM model of ``config`` (the paper's MLP, or the VGG-like networks) for samples of ``input_shape``."""
    networks = {}
    if config.architecture == "vgg":
        networks = {
            "encoder": VGGEncoder(config.latent_dim, list(config.vgg_filters), name="encoder"),
            "decoder": VGGDecoder(input_shape, list(config.vgg_filters), likelihood, name="decoder"),
        }
    return DCGMM(
        input_shape,
        num_clusters=num_clusters,
        latent_dim=config.latent_dim,
        likelihood=likelihood,
        kl_estimator=config.kl_estimator,
        seed=seed,
        pair_loss=config.pair_loss,
        embedding_pair_weight=config.embedding_pair_weight,
        **networks,
    )


def pretrained_model(
    build: Callable[[int], DCGMM],
    x: np.ndarray,
    *,
    seed: int,
    epochs: int,
    batch_size: int,
    name: str,
    cache_dir: Path | None,
    verbose: int | str = 0,
) -> DCGMM:
    """The model ``build(seed)`` after its (cached) autoencoder pretraining on ``x`` (checked already).

    The cache file in ``cache_dir`` (None: no cache) holds the autoencoder alone, so models of any K share it; it
    is named by ``name``, the seed and a hash of what the autoencoder's weights depend on. A file of the name used
    before (whose hash held K and the mixture's variance floor) still loads. The model is made and pretrained under
    :func:`dcgmm_tf.process_state.process_seeds` of ``seed``.
    """
    with process_seeds(seed):  # Keras' default initializers and tf.data's shuffle draw from the process's seeds
        model = build(seed)
        cache = legacy_cache = None
        if cache_dir is not None:
            cache, legacy_cache = (cache_dir / n for n in cache_names(model, x, seed, epochs, batch_size, name))
        cached = pretrain_checked(
            model,
            x,
            epochs=epochs,
            batch_size=batch_size,
            seed=seed,
            cache_path=cache,
            verbose=verbose,
            legacy_path=legacy_cache,
        )
    logging.info("pretrained weights %s", cache_note(cached, cache))
    return model


def cache_names(model: DCGMM, x: np.ndarray, seed: int, epochs: int, batch_size: int, name: str) -> tuple[str, str]:
    """The file names of :func:`pretrained_model`'s cache for ``model``: the name now, and the name before the
    cache held the autoencoder alone (its hash also held K and the mixture's variance floor)."""
    # What the pretrained weights depend on; not K: the networks are built (initialised) before the mixture.
    model_config = model.get_config()
    settings = {k: model_config[k] for k in ("encoder", "decoder", "seed")}
    settings.update(pretrain_epochs=epochs, pretrain_batch_size=batch_size, data=array_hash(x))
    legacy = {**settings, **{k: model_config[k] for k in ("num_clusters", "min_variance")}}
    return tuple(f"pretrain-{name}-seed{seed}-{settings_hash(s)}.weights.h5" for s in (settings, legacy))


def with_autoencoder(build: Callable[[int], DCGMM], seed: int, pretrained: DCGMM) -> DCGMM:
    """The model ``build(seed)``, made under :func:`dcgmm_tf.process_state.process_seeds` of ``seed`` as
    :func:`pretrained_model` makes it, with the encoder and decoder weights of ``pretrained`` (any K: the
    autoencoder's weights do not depend on it); its mixture is left to a start."""
    with process_seeds(seed):
        model = build(seed)
    model.encoder.set_weights(pretrained.encoder.get_weights())
    model.decoder.set_weights(pretrained.decoder.get_weights())
    return model


def pretraining_seed(config: RunConfig) -> int:
    """The seed of the pretraining: ``config.pretrain_seed``, or the run's seed when it is -1."""
    return config.seed if config.pretrain_seed < 0 else config.pretrain_seed


def with_chosen_clusters(
    config: RunConfig,
    run: PreparedRun,
    runtime: RuntimeConfig,
    fit: Callable[[DCGMM, ConstraintSet], object],
) -> tuple[PreparedRun, DCGMM]:
    """``run`` with K chosen from its pairs (``config.num_clusters=0``), and the pretrained model K was chosen on.

    The autoencoder is pretrained as for a 2-cluster model (in the cache file of any K's pretraining), K is chosen in
    :data:`dcgmm_tf.cluster_count.DEFAULT_CANDIDATES` by :func:`dcgmm_tf.cluster_count.choose_num_clusters` on its
    embedding from the answers (their copies spread to neighbours would sit in other folds than the answer they
    copy, and chose K = 11 and 16 where the answers chose 10 and 12 on Fashion-MNIST, docs/your-data.md), then,
    with ``config.probe_epochs``, among that K and its neighbours by probes
    (:func:`dcgmm_tf.cluster_count.probe_num_clusters`): each a model of that K on the pretrained autoencoder,
    started on three quarters of the answers (spread as the run spreads them) and trained by ``fit(model,
    pairs)``. The run then trains as one with ``num_clusters=K`` would, on the same pretrained autoencoder (its
    weights do not depend on K: pass the model to :func:`started_model`, which then pretrains nothing again).
    """
    x_train = run.inputs.x_train
    build = functools.partial(make_model, config, x_train.shape[1:], run.data.likelihood)
    model = pretrained_model(
        functools.partial(build, 2),
        x_train,
        seed=pretraining_seed(config),
        epochs=config.pretrain_epochs,
        batch_size=config.pretrain_batch_size,
        name=run.data.name,
        cache_dir=cache_folder(runtime),
        verbose=runtime.verbose,
    )
    count = choose_num_clusters(  # from the answers, not their spread copies
        model.embed(x_train),
        run.answers,
        seed=config.seed,
        weights=config.choice_weights,
        splits=config.choice_splits,
        rule=config.choice_rule,
    )
    logging.info(
        "K chosen from the pairs on the pretrained embedding: %d (%s; K that tie the best: %s)",
        count.num_clusters,
        count.criterion,
        ", ".join(map(str, count.tied)) or "none, the BIC decided",
    )

    def train_probe(num_clusters: int, pairs: ConstraintSet) -> DCGMM:
        probe = with_autoencoder(functools.partial(build, num_clusters), config.seed, model)
        start_mixture(probe, x_train, config.cluster_init, pairs, seed=config.seed, gmm_seed=pretraining_seed(config))
        fit(probe, pairs)
        return probe

    if config.probe_epochs:
        spread = functools.partial(training_pairs, config, x_train)
        count = probe_num_clusters(count, run.answers, x_train, train_probe, seed=config.seed, spread=spread)
        scores = ", ".join(f"K={k}: {v:.4f}" for k, v in zip(count.probed, count.probe_scores))
        logging.info(
            "K chosen by the probes: %d (held-out log-likelihood per pair %s; K that tie the best: %s)",
            count.num_clusters,
            scores,
            ", ".join(map(str, count.tied)),
        )
    return dataclasses.replace(run, num_clusters=count.num_clusters), model


def started_model(
    config: RunConfig, run: PreparedRun, runtime: RuntimeConfig, pretrained: DCGMM | None = None
) -> DCGMM:
    """The model of ``config`` after pretraining and the start of ``config.cluster_init`` on ``run``.

    With ``pretrained`` (a model of any K pretrained on ``run``'s inputs with the same settings, as
    :func:`with_chosen_clusters` returns it), its autoencoder is taken instead of pretraining again.
    """
    seed = config.seed
    pretrain_seed = pretraining_seed(config)
    x_train, y_train = run.inputs.x_train, run.inputs.y_train
    build = functools.partial(make_model, config, x_train.shape[1:], run.data.likelihood, run.num_clusters)
    if pretrained is None:
        model = pretrained_model(
            build,
            x_train,
            seed=pretrain_seed,
            epochs=config.pretrain_epochs,
            batch_size=config.pretrain_batch_size,
            name=run.data.name,
            cache_dir=cache_folder(runtime),
            verbose=runtime.verbose,
        )
    else:
        model = with_autoencoder(build, pretrain_seed, pretrained)
    if config.pair_tuning_epochs and len(run.constraints):
        tune_with_pairs(model, x_train, run.constraints, config.pair_tuning_epochs, config.pair_tuning_weight, seed)
    start_mixture(
        model,
        x_train,
        config.cluster_init,
        run.constraints,
        labels=y_train,
        labels_per_class=config.init_labels_per_class,
        num_components=config.init_components or None,
        seed=seed,
        gmm_seed=pretrain_seed,
        em_starts=config.init_em_starts,
    )
    if pretrain_seed != seed:  # the training itself (sampling, batches) follows the run's seed
        pretrained = model
        with process_seeds(seed):  # its initial weights are replaced; the caller's random state stays as it is
            model = build(seed)
        model.set_weights(pretrained.get_weights())
    return model
