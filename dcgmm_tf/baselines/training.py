"""The baselines' trainers, with the interface of DC-GMM's (``dcgmm_tf.recipe.TRAINERS``)."""

from __future__ import annotations

import logging

import keras
import pandas as pd

from dcgmm_tf import metrics
from dcgmm_tf.baselines.dec import CIDEC, SDEC
from dcgmm_tf.baselines.layerwise import StackedAutoencoder, pretrain_layerwise
from dcgmm_tf.baselines.pckmeans import PCKMeans
from dcgmm_tf.config import RunConfig, RuntimeConfig, settings_hash
from dcgmm_tf.records import PreparedRun, TrainedModel, predict_clusters
from dcgmm_tf.runtime import cache_note, cache_path, process_seeds, python_generator


def train_pckmeans(config: RunConfig, run: PreparedRun, runtime: RuntimeConfig) -> TrainedModel:
    """PCKMeans on the raw features, as in the paper (no initial clustering to score: ``start_acc`` is NaN)."""
    del runtime
    run_dir = run.run_dir
    model = PCKMeans(run.num_clusters, weight=config.pckmeans_weight, max_iter=config.epochs, seed=config.seed)
    model.fit(run.data.x_train, run.constraints)
    history = pd.DataFrame(model.history_)
    if run_dir is not None:
        history.to_csv(run_dir / "history.csv", index=False)
    logging.info("PCKMeans: %d iterations, converged: %s", model.n_iter_, model.converged_)
    return TrainedModel(model, history.to_dict("list"), float("nan"))


def train_dec(config: RunConfig, run: PreparedRun, runtime: RuntimeConfig) -> TrainedModel:
    """SDEC or C-IDEC (``config.method``): layer-wise pretraining of the stacked autoencoder (cached per seed, so
    both share it), k-means centres, then the clustering epochs; ``start_acc`` is the test ACC of the k-means."""
    with process_seeds(config.seed):  # Keras' default initializers draw from the process's seeds
        return _train_dec(config, run, runtime)


def _train_dec(config: RunConfig, run: PreparedRun, runtime: RuntimeConfig) -> TrainedModel:
    """:func:`train_dec` inside its :func:`dcgmm_tf.runtime.process_seeds`."""
    data, constraints, num_clusters, run_dir = run.data, run.constraints, run.num_clusters, run.run_dir
    x_train, x_test, y_test, seed = data.x_train, data.x_test, data.y_test, config.seed
    autoencoder = StackedAutoencoder(x_train.shape[-1], config.latent_dim, name="autoencoder")
    settings = {
        "model": autoencoder.get_config(),
        "layer_epochs": config.layer_pretrain_epochs,
        "finetune_epochs": config.finetune_epochs,
        "batch_size": config.pretrain_batch_size,
        "n": len(x_train),
    }
    cache = cache_path(runtime, f"dec-pretrain-{data.name}-seed{seed}-{settings_hash(settings)}.weights.h5")
    cached = pretrain_layerwise(
        autoencoder,
        x_train,
        layer_epochs=config.layer_pretrain_epochs,
        finetune_epochs=config.finetune_epochs,
        batch_size=config.pretrain_batch_size,
        seed=seed,
        cache_path=cache,
        verbose=runtime.verbose,
    )
    logging.info("pretrained autoencoder %s", cache_note(cached, cache))
    if config.method == "sdec":  # DEC's optimiser
        model = SDEC(autoencoder.encoder, num_clusters, pair_weight=config.sdec_lambda, name="sdec")
        optimizer = keras.optimizers.SGD(0.01, momentum=0.9)
    else:  # IDEC's optimiser
        model = CIDEC(
            autoencoder.encoder,
            autoencoder.decoder,
            num_clusters,
            gamma=config.cidec_gamma,
            ml_penalty=config.cidec_ml_penalty,
            cl_penalty=config.cidec_cl_penalty,
            name="cidec",
        )
        optimizer = keras.optimizers.Adam(config.learning_rate)
    model.compile(optimizer=optimizer)
    model.initialize_centers(x_train, seed=seed)
    model.optimizer.build(model.trainable_variables)  # made in its first step, they would trace it twice
    start_acc = metrics.cluster_accuracy(y_test, predict_clusters(model, x_test, runtime.eval_batch_size))
    logging.info("test ACC of k-means on the pretrained embedding: %.4f", start_acc)

    def evaluate(epoch: int, log: dict) -> None:
        if epoch % runtime.eval_every == 0:
            clusters = predict_clusters(model, x_test, runtime.eval_batch_size)
            log.update({f"test_{k}": v for k, v in metrics.clustering_scores(y_test, clusters).items()})
        logging.info("epoch %d: %s", epoch, log)

    history = pd.DataFrame(
        model.fit_clusters(
            x_train,
            constraints,
            config.epochs,
            batch_size=config.batch_size,
            tol=config.dec_tol,
            seed=seed,
            callback=evaluate,
            batch_order=python_generator(),  # the stream after the initializers' draws, as before
        )
    )
    if run_dir is not None:
        history.to_csv(run_dir / "history.csv", index=False)
        model.save_weights(run_dir / "model.weights.h5")
    return TrainedModel(model, history.to_dict("list"), start_acc)
