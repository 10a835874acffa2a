"""The parts of ``studies.your_data``, flag-free: each returns one row per fit.

``small``: scikit-learn's wine and breast cancer, standardised, with the estimator's defaults, without pairs and with
random pairs from the labels, against k-means (10 starts). ``scale``: digits and wine, ARI between the clustering of
X and of a X + b. ``num_clusters``: the K that ``n_clusters="auto"`` chooses on digits, on blobs of unequal sizes and
on Fashion-MNIST's pretrained embedding (the runner's cached pretraining), per seed and link type; where it differs
from the true K the estimator is trained at both and both ACCs are reported. ``checks``: every check of
scikit-learn's ``estimator_checks_generator`` (legacy ones included) on a tiny schedule. ``write_rows`` appends a
part's rows to its CSV file.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from absl import logging

from dcgmm_tf.cluster_count import DEFAULT_CANDIDATES


def _small_sets() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    from sklearn.datasets import load_breast_cancer, load_wine
    from sklearn.preprocessing import StandardScaler

    return {
        name: (StandardScaler().fit_transform(x), y)
        for name, (x, y) in (
            ("wine", load_wine(return_X_y=True)),
            ("breast_cancer", load_breast_cancer(return_X_y=True)),
        )
    }


def _blobs(seed: int) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import make_blobs

    return make_blobs([100, 200, 300, 400, 600, 800], n_features=20, cluster_std=2.5, random_state=seed)


def _digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    return x / 16.0, y


def tiny_schedule(epochs: int, seed: int) -> dict:
    """The estimator's settings for a quick fit: a 32-32 network, a 2-d embedding, ``epochs`` epochs, 1 of
    pretraining, batch 32; with ``n_clusters="auto"`` each fold tuned for 1 epoch."""
    return dict(
        hidden_units=(32, 32),
        latent_dim=2,
        epochs=epochs,
        pretrain_epochs=1,
        choice_tuning_epochs=1,
        batch_size=32,
        random_state=seed,
    )


def small(seeds: list[int], pairs: int, params: dict | None = None) -> list[dict]:
    """Wine and breast cancer without and with ``pairs`` pairs, against k-means.

    ``params``: settings of every estimator (default: its defaults); the seed is each row's.
    """
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score

    from dcgmm_tf import ConstraintSet, DCGMMClustering

    rows = []
    for name, (x, y) in _small_sets().items():
        k = len(np.unique(y))
        for seed in seeds:
            kmeans = adjusted_rand_score(y, KMeans(k, n_init=10, random_state=seed).fit_predict(x))
            for count in (0, pairs):
                constraints = ConstraintSet.from_labels(y, count, seed=seed) if count else None
                start = time.time()
                est = DCGMMClustering(k, **{**(params or {}), "random_state": seed}).fit(x, constraints=constraints)
                rows.append(
                    dict(
                        dataset=name,
                        seed=seed,
                        pairs=count,
                        ari=adjusted_rand_score(y, est.labels_),
                        kmeans_ari=kmeans,
                        clusters_used=len(np.unique(est.labels_)),
                        epochs=est.schedule_.epochs,
                        batch_size=est.schedule_.batch_size,
                        seconds=round(time.time() - start, 1),
                    )
                )
                logging.info("%s", rows[-1])
    return rows


def scale(
    seeds: list[int],
    datasets: list[str],
    pairs: int,
    params: dict | None = None,
    likelihoods: Sequence[str] = ("bernoulli", "gaussian"),
) -> list[dict]:
    """ARI between the clusterings of X and of a X + b, with ``pairs`` pairs, for each of ``likelihoods``, on
    those of ``datasets`` that are digits or wine (``params`` as in :func:`small`)."""
    from sklearn.metrics import adjusted_rand_score

    from dcgmm_tf import ConstraintSet, DCGMMClustering

    sets = {"digits": _digits, "wine": lambda: _small_sets()["wine"]}
    sets = {name: load() for name, load in sets.items() if name in datasets}
    rows = []
    for name, (x, y) in sets.items():
        k = len(np.unique(y))
        for seed in seeds:
            constraints = ConstraintSet.from_labels(y, pairs, seed=seed)
            for likelihood in likelihoods:
                settings = {**(params or {}), "n_clusters": k, "likelihood": likelihood, "random_state": seed}
                reference = DCGMMClustering(**settings).fit(x, constraints=constraints)
                for a, b in ((1e-3, 0.0), (1e3, -50.0)):
                    est = DCGMMClustering(**settings).fit(a * x + b, constraints=constraints)
                    rows.append(
                        dict(
                            dataset=name,
                            seed=seed,
                            likelihood=likelihood,
                            a=a,
                            b=b,
                            ari_to_x=adjusted_rand_score(reference.labels_, est.labels_),
                            ari_x=adjusted_rand_score(y, reference.labels_),
                            ari_scaled=adjusted_rand_score(y, est.labels_),
                            finite_loss=bool(np.isfinite(est.history_["loss"]).all()),
                        )
                    )
                    logging.info("%s", rows[-1])
    return rows


def _fashion_embedding(seed: int, cache_dir: Path) -> tuple[np.ndarray, np.ndarray]:
    """The runner's pretrained Fashion-MNIST embedding of the training split (from its cache), with the earlier
    defaults' 10 pretraining epochs with which docs/your-data.md's numbers were measured."""
    from dcgmm_tf import recipe
    from dcgmm_tf.config import RunConfig
    from dcgmm_tf.data import load_dataset
    from dcgmm_tf.recipe import prepare_run

    config = RunConfig(pretrain_epochs=10, seed=seed)  # the pretraining of the older recipe
    run = prepare_run(config, load_dataset("fashion"))
    model = recipe.pretrained_model(
        lambda s: recipe.make_model(config, run.inputs.x_train.shape[1:], run.data.likelihood, run.num_clusters, s),
        run.inputs.x_train,
        seed=seed,
        epochs=config.pretrain_epochs,
        batch_size=config.pretrain_batch_size,
        name=run.data.name,
        cache_dir=cache_dir,
    )
    return model.embed(run.inputs.x_train), run.inputs.y_train


def _estimator_embedding(x: np.ndarray, seed: int, likelihood: str, pretrain_epochs: int | None) -> np.ndarray:
    """The embedding after the estimator's own pretraining of ``x`` (its scaling, schedule and default network;
    ``pretrain_epochs`` replaces the schedule's when given)."""
    from dcgmm_tf import recipe
    from dcgmm_tf.deep_fit import mlp_model
    from dcgmm_tf.sizing import fit_schedule, hidden_units_for, input_scaling

    offset, scale = input_scaling(x, likelihood)
    x = ((x - offset) / scale).astype(np.float32)
    schedule = fit_schedule(len(x))
    units = hidden_units_for("auto", x.shape[1])
    model = recipe.pretrained_model(
        lambda s: mlp_model(x.shape[1], 2, 10, units, likelihood, s),
        x,
        seed=seed,
        epochs=schedule.pretrain_epochs if pretrain_epochs is None else pretrain_epochs,
        batch_size=schedule.batch_size,
        name="estimator",
        cache_dir=None,
    )
    return model.embed(x)


def num_clusters(
    seeds: list[int],
    datasets: list[str],
    link_types: list[str],
    train: bool,
    cache_dir: Path,
    params: dict | None = None,
    candidates: Sequence[int] = DEFAULT_CANDIDATES,
    probe_epochs: int | str = 0,
) -> list[dict]:
    """The chosen K and the K that tie it (``tied_k``) per data set (those of ``datasets`` among digits, blobs,
    fashion), seed and link type (on the pretrained embedding, as ``n_clusters="auto"`` chooses first); with both
    link types and ``train`` also the estimator's ``n_clusters="auto"`` fit with ``probe_epochs`` (its K, after the
    trained probes if any, ``probe_k``, and its ACC) and the ACC at the true K (``params`` as in :func:`small`; its
    ``pretrain_epochs`` also makes the embedding). Fashion-MNIST's embedding comes from the runner's pretraining
    cache in ``cache_dir``; K is chosen among ``candidates``."""
    from dcgmm_tf import ConstraintSet, DCGMMClustering
    from dcgmm_tf.cluster_count import choose_num_clusters
    from dcgmm_tf.metrics import cluster_accuracy

    rows = []
    params = params or {}
    for name in [d for d in datasets if d in ("digits", "blobs", "fashion")]:
        for seed in seeds:
            if name == "fashion":
                x, (z, y) = None, _fashion_embedding(seed, cache_dir)
            else:
                x, y = _digits() if name == "digits" else _blobs(seed)
                likelihood = "bernoulli" if name == "digits" else "gaussian"
                z = _estimator_embedding(x, seed, likelihood, params.get("pretrain_epochs"))
            k = len(np.unique(y))
            pairs = 6000 if name == "fashion" else 1000
            for link_type in link_types:
                constraints = ConstraintSet.from_labels(y, pairs, seed=seed, link_type=link_type)
                start = time.time()
                count = choose_num_clusters(z, constraints, candidates, seed=seed)
                row = dict(
                    dataset=name, seed=seed, link_type=link_type, pairs=pairs, true_k=k, chosen_k=count.num_clusters
                )
                row["tied_k"] = " ".join(map(str, count.tied))  # the K that tie the best (the choice among them)
                row["choice_seconds"] = round(time.time() - start, 1)
                if x is not None and link_type == "both" and train:
                    settings = {**params, "random_state": seed}
                    start = time.time()
                    bounds = (min(candidates), max(candidates))
                    auto = DCGMMClustering("auto", cluster_range=bounds, probe_epochs=probe_epochs, **settings)
                    auto.fit(x, constraints=constraints)
                    row["auto_seconds"] = round(time.time() - start, 1)
                    row["probe_k"], row["acc_chosen"] = auto.n_clusters_, cluster_accuracy(y, auto.labels_)
                    row["probe_scores"] = " ".join(
                        f"{k}:{v:.4f}" for k, v in zip(auto.cluster_count_.probed, auto.cluster_count_.probe_scores)
                    )
                    row["acc_true_k"] = row["acc_chosen"]  # n_clusters="auto" trains as n_clusters=k when it chose k
                    if auto.n_clusters_ != k:
                        est = DCGMMClustering(k, **settings).fit(x, constraints=constraints)
                        row["acc_true_k"] = cluster_accuracy(y, est.labels_)
                rows.append(row)
                logging.info("%s", row)
    return rows


def checks(seeds: list[int], epochs: int) -> list[dict]:
    """Each of scikit-learn's estimator checks on the tiny schedule of ``epochs``: passed, skipped by scikit-learn
    (with its reason) or failed."""
    import unittest
    import warnings

    from sklearn.utils.estimator_checks import estimator_checks_generator

    from dcgmm_tf import DCGMMClustering

    tiny = dict(latent_dim=2, epochs=epochs, pretrain_epochs=1, batch_size=32, random_state=seeds[0])
    rows = []
    for estimator, check in estimator_checks_generator(DCGMMClustering(3, **tiny), legacy=True):
        name, start = getattr(check, "func", check).__name__, time.time()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                check(estimator)
            result, note = "passed", ""
        except unittest.SkipTest as skip:
            result, note = "skipped", str(skip)
        except Exception as error:  # noqa: BLE001 -- a failed check of any kind is a row
            result, note = "failed", f"{type(error).__name__}: {str(error)[:200]}"
        rows.append(dict(check=name, result=result, note=note, seconds=round(time.time() - start, 1)))
        logging.info("%s", rows[-1])
    return rows


def write_rows(rows: list[dict], output_dir: Path, part: str) -> pd.DataFrame:
    """Appends ``rows`` to ``<output_dir>/<part>.csv`` (written with its header when new) and returns them."""
    output_dir.mkdir(parents=True, exist_ok=True)
    path = output_dir / f"{part}.csv"
    frame = pd.DataFrame(rows)
    frame.to_csv(path, mode="a", header=not path.exists(), index=False)
    return frame
