"""One run of DC-GMM from top to bottom, as functions with explicit arguments.

The steps, in the order a run takes them:

1. **Prepare** (:func:`prepare_run`): the data cut to the run's subsets, its inputs checked once, the pairs drawn
   or read and spread to neighbours, K, the run folder.
2. **Pretrain** (:func:`make_model`, :func:`pretrained_model`): the autoencoder, cached; :func:`with_autoencoder`
   reuses one for a model of another K. With K to choose, :func:`choose_clusters` chooses it from the pairs (the
   runner's :func:`with_chosen_clusters` and the estimator both call it).
3. **Tune with the pairs** (:func:`tune`), then **start** the mixture
   (:func:`dcgmm_tf.pretraining.start_mixture`): :func:`started_model` does 2 and 3 for a config.
4. **Fit** (:func:`fit`): the C-ELBO with restarts of the start; :func:`fit_config` takes its arguments from a
   config.
5. **Evaluate** (:func:`results_row`, :func:`train_and_evaluate`): the test split and the pairs scored into one row.

The runner (``experiments.run``), the estimator (:class:`dcgmm_tf.estimator.DCGMMClustering`), the active loop and
the labelling page call these functions; only :func:`fit_config`, :func:`started_model` and the functions after them
read a :class:`~dcgmm_tf.config.RunConfig`. The baselines' trainers are in :mod:`dcgmm_tf.baselines.training`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import keras
import numpy as np

from dcgmm_tf import metrics, validation
from dcgmm_tf.baselines.training import train_dec, train_pckmeans
from dcgmm_tf.callbacks import ClusteringMetrics, ClusterRestart, StableClusters
from dcgmm_tf.cluster_count import DEFAULT_CANDIDATES, ClusterCount, choose_num_clusters, probe_num_clusters
from dcgmm_tf.config import (
    LATENT_CLASS_STARTS,
    LINK_START_STRATEGIES,
    MIXTURE_METHODS,
    RunConfig,
    RuntimeConfig,
    settings_hash,
)
from dcgmm_tf.constraints import ConstraintSet, spread
from dcgmm_tf.data import DataSplits
from dcgmm_tf.data.features import with_input_features
from dcgmm_tf.fitting import FitSchedule, fit_mixture
from dcgmm_tf.model import DCGMM
from dcgmm_tf.networks import VGGDecoder, VGGEncoder
from dcgmm_tf.pair_tuning import tune_with_pairs
from dcgmm_tf.pretraining import pretrain_checked, start_mixture
from dcgmm_tf.records import Inputs, PreparedRun, RunResult, TrainedModel, predict_clusters
from dcgmm_tf.runtime import cache_folder, cache_note, distribution_strategy, precision_policy, process_seeds
from dcgmm_tf.storage import array_hash, write_atomically

# --- 1. Prepare ------------------------------------------------------------------------------------------------------


def subset_indices(data: DataSplits, config: RunConfig) -> tuple[np.ndarray, np.ndarray]:
    """The rows of random subsets of ``config.max_train_samples`` / ``max_test_samples`` (drawn with the seed).

    Returns:
      The sorted rows of the training split and of the test split (all rows where there is no limit).
    """
    rng = np.random.default_rng(config.seed)
    kept = []
    for x, limit in ((data.x_train, config.max_train_samples), (data.x_test, config.max_test_samples)):
        kept.append(np.sort(rng.choice(len(x), limit, replace=False)) if 0 < limit < len(x) else np.arange(len(x)))
    return kept[0], kept[1]


def subsets(data: DataSplits, config: RunConfig) -> DataSplits:
    """``data`` cut to the subsets of :func:`subset_indices`."""
    train, test = subset_indices(data, config)
    return _cut(data, train, test)


def _cut(data: DataSplits, train: np.ndarray, test: np.ndarray) -> DataSplits:
    if len(train) == len(data.x_train) and len(test) == len(data.x_test):
        return data
    return dataclasses.replace(
        data,
        x_train=data.x_train[train],
        y_train=data.y_train[train],
        x_test=data.x_test[test],
        y_test=data.y_test[test],
    )


def model_inputs(data: DataSplits, config: RunConfig) -> Inputs:
    """The splits of ``data`` shaped for ``config.architecture``."""
    shape = data.images if config.architecture == "vgg" else (lambda x: x)
    return Inputs(shape(data.x_train), data.y_train, shape(data.x_test), data.y_test)


def make_constraints(config: RunConfig, y_train: np.ndarray) -> ConstraintSet:
    """The run's constraints.

    None for VaDE; ``config.constraints_file`` (every |W| set to ``config.alpha`` when that is given, so a file of
    +1/-1 answers works); or drawn from the training labels.
    """
    if config.method == "vade":
        return ConstraintSet.empty(len(y_train))
    if config.constraints_file:
        read = ConstraintSet.from_csv(config.constraints_file, len(y_train))
        if config.alpha is None:
            return read
        return ConstraintSet(read.i, read.j, np.sign(read.weight) * config.alpha, read.num_samples)
    return ConstraintSet.from_labels(
        y_train,
        config.num_constraints,
        alpha=config.alpha,
        q=config.q,
        link_type=config.link_type,
        seed=config.seed,
        transitive_closure=config.transitive_closure,
    )


def spread_to_neighbours(constraints: ConstraintSet, x: np.ndarray, k: int, factor: float) -> ConstraintSet:
    """``constraints`` and each answer spread to the ``k`` nearest neighbours in ``x`` (the samples' inputs) of either
    end of its pair, at ``factor`` times its weight (not the paper's; see :mod:`dcgmm_tf.constraints.spread`); with
    ``k`` 0, ``constraints`` as they are."""
    if not len(constraints) or not k:
        return constraints
    i, j, weight = constraints.i, constraints.j, constraints.weight
    ends = np.unique(np.concatenate([i, j]))
    found = spread.nearest_neighbours(x, ends, k)
    return ConstraintSet(*spread.spread_pairs(i, j, weight, ends, found, factor), constraints.num_samples)


def training_pairs(config: RunConfig, x_train: np.ndarray, answered: ConstraintSet) -> ConstraintSet:
    """The pairs a run of ``config`` trains with: the ``answered`` ones, spread to nearest neighbours in
    ``x_train`` when ``config.spread_neighbours`` is set (see :func:`spread_to_neighbours`)."""
    return spread_to_neighbours(answered, x_train, config.spread_neighbours, config.spread_weight)


def run_dir_of(config: RunConfig, data_name: str, runtime: RuntimeConfig) -> Path:
    """Where a run keeps its history, logs, backups and model: ``<output_dir>/runs/<method>-<data>-seed<s>``."""
    return Path(runtime.output_dir) / "runs" / f"{config.method}-{data_name}-seed{config.seed}"


def prepare_run(
    config: RunConfig,
    data: DataSplits,
    *,
    constraints: ConstraintSet | Callable[[np.ndarray], ConstraintSet] | None = None,
    num_clusters: int | None = None,
    run_dir: str | Path | None = None,
    use_subsets: bool = True,
    spread: bool = True,
) -> PreparedRun:
    """The prepared run of ``config`` on ``data``; each split is checked here, once.

    Args:
      config: The run's settings.
      data: The whole data set.
      constraints: The training constraints (indexing the training split after the subsets), or a function of
        the training labels that makes them; default: those of :func:`make_constraints`.
      num_clusters: K; default ``config.num_clusters``, the number of classes of the whole ``data`` for -1 (0:
        to be chosen by the trainer, see :func:`dcgmm_tf.recipe.with_chosen_clusters`).
      run_dir: The run folder, made here (None: the run writes no files).
      use_subsets: Cut the data to the subsets of ``config`` (off: ``data`` as given).
      spread: Give the run the :func:`training_pairs` of its constraints (off: the answered pairs alone, for a
        caller that adds answers and spreads them itself, as the active loop does each round).

    Returns:
      The prepared run.

    Raises:
      ValueError: On bad data or constraints that do not index the training split.
    """
    if num_clusters is None:
        num_clusters = data.num_classes if config.num_clusters == -1 else config.num_clusters
    if use_subsets:
        train, test = subset_indices(data, config)
    else:
        train, test = np.arange(len(data.x_train)), np.arange(len(data.x_test))
    data = with_input_features(_cut(data, train, test), config.input_features)
    validation.check_data(
        data.x_train, data.y_train, num_clusters=num_clusters or None, likelihood=data.likelihood, name="x_train"
    )
    if len(data.x_test) or use_subsets:
        validation.check_data(
            data.x_test,
            data.y_test,
            num_clusters=(num_clusters or None) if use_subsets else None,
            likelihood=data.likelihood,
            name="x_test",
        )
    if constraints is None:
        constraints = make_constraints(config, data.y_train)
    elif callable(constraints):
        constraints = constraints(data.y_train)
    if constraints.num_samples != len(data.x_train):
        raise ValueError(
            f"the constraints index {constraints.num_samples} samples but x_train holds {len(data.x_train)}"
        )
    answers = constraints
    if spread:
        constraints = training_pairs(config, data.x_train, answers)
    if run_dir is not None:
        run_dir = Path(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
    return PreparedRun(data, model_inputs(data, config), constraints, answers, num_clusters, run_dir, train, test)


# --- 2. Pretrain -----------------------------------------------------------------------------------------------------


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


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    """Logs that the phase ``name`` of a run (pretraining, tuning, the start, training) is done, and its seconds."""
    began = time.perf_counter()
    yield
    logging.info("%s done in %.1f s", name, time.perf_counter() - began)


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
    fused_adam: bool = False,
) -> DCGMM:
    """The model ``build(seed)`` after its (cached) autoencoder pretraining on ``x`` (checked already), with
    :class:`dcgmm_tf.optimizers.FusedAdam` when ``fused_adam`` (else Keras' Adam).

    The cache file in ``cache_dir`` (None: no cache) holds the autoencoder alone, so models of any K share it; it
    is named by ``name``, the seed and a hash of what the autoencoder's weights depend on. The model is made and
    pretrained under :func:`dcgmm_tf.runtime.process_seeds` of ``seed``.
    """
    with process_seeds(seed):  # Keras' default initializers and tf.data's shuffle draw from the process's seeds
        model = build(seed)
        cache = (
            None if cache_dir is None else cache_dir / cache_name(model, x, seed, epochs, batch_size, name, fused_adam)
        )
        cached = pretrain_checked(
            model,
            x,
            epochs=epochs,
            batch_size=batch_size,
            seed=seed,
            cache_path=cache,
            verbose=verbose,
            fused_adam=fused_adam,
        )
    logging.info("pretrained weights %s", cache_note(cached, cache))
    return model


def cache_name(
    model: DCGMM, x: np.ndarray, seed: int, epochs: int, batch_size: int, name: str, fused_adam: bool = False
) -> str:
    """The file name of :func:`pretrained_model`'s cache for ``model``."""
    # What the pretrained weights depend on; not K: the networks are built (initialised) before the mixture.
    model_config = model.get_config()
    settings = {k: model_config[k] for k in ("encoder", "decoder", "seed")}
    settings.update(pretrain_epochs=epochs, pretrain_batch_size=batch_size, data=array_hash(x))
    if fused_adam:  # named only when on, so that the caches of Keras' Adam keep their names
        settings.update(fused_adam=True)
    return f"pretrain-{name}-seed{seed}-{settings_hash(settings)}.weights.h5"


def with_autoencoder(build: Callable[[int], DCGMM], seed: int, pretrained: DCGMM) -> DCGMM:
    """The model ``build(seed)``, made under :func:`dcgmm_tf.runtime.process_seeds` of ``seed`` as
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


def choose_clusters(
    z: np.ndarray,
    answers: ConstraintSet,
    x: np.ndarray,
    candidates: Sequence[int] = DEFAULT_CANDIDATES,
    *,
    seed: int,
    weights: str,
    splits: int,
    rule: str,
    fold_embedding: Callable[[ConstraintSet], np.ndarray] | None = None,
    train_probe: Callable[[int, ConstraintSet], DCGMM] | None = None,
    spread: Callable[[ConstraintSet], ConstraintSet] = lambda pairs: pairs,
) -> ClusterCount:
    """K chosen from the ``answers`` (the runner's ``num_clusters=0``, the estimator's ``n_clusters="auto"``).

    First on the pretrained embedding ``z`` of ``x`` by :func:`dcgmm_tf.cluster_count.choose_num_clusters` among
    ``candidates`` (``weights``, ``splits``, ``rule`` and ``fold_embedding`` as it takes them), from the answers
    and not their copies spread to neighbours: those would sit in other folds than the answer they copy, and chose
    K = 11 and 16 where the answers chose 10 and 12 on Fashion-MNIST (docs/your-data.md). Then, given
    ``train_probe``, among that K and its neighbours by probes (:func:`dcgmm_tf.cluster_count.probe_num_clusters`):
    each a model of that K trained by ``train_probe(K, pairs)`` on three quarters of the answers (``spread`` as the
    fit spreads them) and scored by the held-out quarter.

    Returns:
      The choice, with every candidate's score.
    """
    count = choose_num_clusters(
        z, answers, candidates, seed=seed, fold_embedding=fold_embedding, weights=weights, splits=splits, rule=rule
    )
    logging.info(
        "K chosen from the pairs on the pretrained embedding: %d (%s; K that tie the best: %s)",
        count.num_clusters,
        count.criterion,
        ", ".join(map(str, count.tied)) or "none, the BIC decided",
    )
    if train_probe is None:
        return count
    count = probe_num_clusters(count, answers, x, train_probe, seed=seed, spread=spread)
    scores = ", ".join(f"K={k}: {v:.4f}" for k, v in zip(count.probed, count.probe_scores))
    logging.info(
        "K chosen by the probes: %d (held-out log-likelihood per pair %s; K that tie the best: %s)",
        count.num_clusters,
        scores,
        ", ".join(map(str, count.tied)),
    )
    return count


def with_chosen_clusters(
    config: RunConfig,
    run: PreparedRun,
    runtime: RuntimeConfig,
    fit: Callable[[DCGMM, ConstraintSet], object],
) -> tuple[PreparedRun, DCGMM]:
    """``run`` with K chosen from its pairs (``config.num_clusters=0``), and the pretrained model K was chosen on.

    The autoencoder is pretrained as for a 2-cluster model (in the cache file of any K's pretraining) and K is chosen
    in :data:`dcgmm_tf.cluster_count.DEFAULT_CANDIDATES` by :func:`choose_clusters` on its embedding, with
    ``config.probe_epochs`` by probes: each a model of its K on the pretrained autoencoder, started on three quarters
    of the answers (spread as the run spreads them) and trained by ``fit(model, pairs)``. The run then trains as one
    with ``num_clusters=K`` would, on the same pretrained autoencoder (its weights do not depend on K: pass the model
    to :func:`started_model`, which then pretrains nothing again).
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
        fused_adam=config.fused_adam,
    )

    def train_probe(num_clusters: int, pairs: ConstraintSet) -> DCGMM:
        probe = with_autoencoder(functools.partial(build, num_clusters), config.seed, model)
        start_mixture(probe, x_train, config.cluster_init, pairs, seed=config.seed, gmm_seed=pretraining_seed(config))
        fit(probe, pairs)
        return probe

    count = choose_clusters(
        model.embed(x_train),
        run.answers,
        x_train,
        seed=config.seed,
        weights=config.choice_weights,
        splits=config.choice_splits,
        rule=config.choice_rule,
        train_probe=train_probe if config.probe_epochs else None,
        spread=functools.partial(training_pairs, config, x_train),
    )
    return dataclasses.replace(run, num_clusters=count.num_clusters), model


# --- 3. Tune with the pairs and start --------------------------------------------------------------------------------


def tune(
    model: DCGMM,
    x: np.ndarray,
    pairs: ConstraintSet,
    *,
    epochs: int,
    weight: float,
    seed: int,
    batch_size: int = 256,
    fused_adam: bool = False,
) -> None:
    """Tunes the pretrained ``model``'s autoencoder with ``pairs`` for ``epochs`` epochs: reconstruction plus
    ``weight`` times a contrastive pair term on the embedding (not the paper's, see :mod:`dcgmm_tf.pair_tuning`);
    nothing without epochs or pairs. ``fused_adam``: :class:`dcgmm_tf.optimizers.FusedAdam` (else Keras' Adam)."""
    if epochs and len(pairs):
        tune_with_pairs(model, x, pairs, epochs, weight, seed, batch_size, fused_adam=fused_adam)


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
        with phase("pretraining"):
            model = pretrained_model(
                build,
                x_train,
                seed=pretrain_seed,
                epochs=config.pretrain_epochs,
                batch_size=config.pretrain_batch_size,
                name=run.data.name,
                cache_dir=cache_folder(runtime),
                verbose=runtime.verbose,
                fused_adam=config.fused_adam,
            )
    else:
        model = with_autoencoder(build, pretrain_seed, pretrained)
    with phase("tuning with the pairs"):
        tune(
            model,
            x_train,
            run.constraints,
            epochs=config.pair_tuning_epochs,
            weight=config.pair_tuning_weight,
            seed=seed,
            fused_adam=config.fused_adam,
        )
    with phase(f"the start ({config.cluster_init})"):
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


# --- 4. Fit ----------------------------------------------------------------------------------------------------------


def fit(
    model: DCGMM,
    x: np.ndarray,
    pairs: ConstraintSet,
    schedule: FitSchedule,
    *,
    start: str,
    restart_every: int,
    seed: int,
    components: int | None = None,
    em_starts: int = LATENT_CLASS_STARTS,
    callbacks: Sequence[keras.callbacks.Callback] = (),
    run_dir: Path | None = None,
    tol: float | None = None,
    patience: int = 10,
    **options: Any,
) -> dict[str, list]:
    """Trains the started ``model`` on the C-ELBO (:func:`dcgmm_tf.fitting.fit_mixture` with ``schedule`` and
    ``options``), restarting its mixture by ``start`` every ``restart_every`` epochs and after the last where the
    start uses the pairs (``components`` and ``em_starts`` as the start took them), then ``callbacks``; with ``tol``,
    stopped once at most that share of the clusters of ``x`` changed in each of ``patience`` epochs in a row
    (:class:`~dcgmm_tf.callbacks.StableClusters`; None: all of ``schedule``'s epochs). Returns the history."""
    stops = [] if tol is None else [StableClusters(x, tol, patience)]
    restarts = []
    if start in LINK_START_STRATEGIES and restart_every and len(pairs) > 0:
        restarts.append(ClusterRestart(x, pairs, restart_every, start, components, seed, em_starts=em_starts))
    return fit_mixture(model, x, pairs, schedule, [*stops, *restarts, *callbacks], run_dir, **options)


def fit_loss(model: DCGMM, x: np.ndarray, pairs: ConstraintSet, *, draws: int = 4, batch_size: int = 1024) -> float:
    """The negative C-ELBO per sample of the trained ``model`` on all of ``x``: the reconstruction and cluster terms
    averaged over ``draws`` Monte Carlo draws of the embedding, plus the pairs' term -(2/N) sum W_ij p(c|x_i).p(c|x_j)
    over all ``pairs`` (a batch's term of Eq. 10 in expectation, up to the batch's (B-1)/B), at the embedding means.
    Fits of the same model to the same data and pairs compare by it: lower is better."""
    x = np.asarray(x, np.float32)
    total = 0.0
    for rows in range(0, len(x), batch_size):
        batch = x[rows : rows + batch_size]
        for _ in range(draws):
            terms = model.compute_loss_terms(batch)
            total += float(terms["reconstruction"] + terms["cluster_kl"]) * len(batch) / draws
    if len(pairs):
        p = model.cluster_probabilities(x)
        same = np.einsum("pk,pk->p", p[pairs.i], p[pairs.j])
        total -= 2.0 * float(np.dot(pairs.weight.astype(np.float64), same))
    return total / len(x)


def fit_config(
    model: DCGMM,
    config: RunConfig,
    x: np.ndarray,
    constraints: ConstraintSet,
    runtime: RuntimeConfig,
    *,
    epochs: int,
    run_dir: Path | None = None,
    callbacks: Sequence[keras.callbacks.Callback] = (),
) -> dict[str, list]:
    """:func:`fit` with the arguments of ``config`` and ``runtime``: ``epochs`` epochs, restarts every
    ``config.restart_every`` epochs (the starts that use the pairs), then ``callbacks``."""
    schedule = FitSchedule(
        epochs,
        batch_size=config.batch_size,
        seed=config.seed,
        layout=config.layout,
        learning_rate=config.learning_rate,
        lr_decay=config.lr_decay,
        lr_decay_epochs=config.lr_decay_epochs,
        clipnorm=config.clipnorm,
        lr_schedule=config.lr_schedule,
    )
    strategy = None if runtime.strategy == "default" else distribution_strategy(runtime.strategy)
    return fit(
        model,
        x,
        constraints,
        schedule,
        start=config.cluster_init,
        restart_every=config.restart_every,
        seed=config.seed,
        components=config.init_components or None,
        em_starts=config.init_em_starts,
        callbacks=callbacks,
        run_dir=run_dir,
        backup_name=f"backup-{config.key()}",
        strategy=strategy,
        jit_compile=runtime.jit_compile,
        steps_per_execution=runtime.steps_per_execution or None,
        verbose=runtime.verbose,
        check_inputs=False,  # checked by prepare_run
    )


def train_dcgmm(
    config: RunConfig, run: PreparedRun, runtime: RuntimeConfig, callbacks: Sequence[keras.callbacks.Callback] = ()
) -> TrainedModel:
    """DC-GMM (VaDE without constraints): pretraining, the initial mixture, then ``config.epochs`` of C-ELBO
    (with ``callbacks`` after the recipe's own)."""
    if run.num_clusters == 0:
        x = run.inputs.x_train

        def probe_fit(model: DCGMM, pairs: ConstraintSet) -> dict[str, list]:  # a probe's training
            return fit_config(model, config, x, pairs, runtime, epochs=config.probe_epochs)

        run, pretrained = with_chosen_clusters(config, run, runtime, probe_fit)
    else:
        pretrained = None
    x_train, _, x_test, y_test = run.inputs
    model = started_model(config, run, runtime, pretrained)
    start_acc = float("nan")  # without a test split, nothing is scored
    if len(x_test):
        start_acc = metrics.cluster_accuracy(y_test, predict_clusters(model, x_test, runtime.eval_batch_size))
        logging.info("test ACC of the initial mixture: %.4f", start_acc)
    if runtime.strategy != "default":  # pretrained on one device, trained on the strategy's replicas
        with distribution_strategy(runtime.strategy).scope(), process_seeds(config.seed):
            replicated = make_model(config, x_train.shape[1:], run.data.likelihood, run.num_clusters, config.seed)
        replicated.set_weights(model.get_weights())
        model = replicated
    scores = []  # the test metrics every runtime.eval_every epochs and after the last
    if len(x_test):
        scores.append(ClusteringMetrics(x_test, y_test, every=runtime.eval_every, batch_size=runtime.eval_batch_size))
    with phase("training"):
        history = fit_config(
            model,
            config,
            x_train,
            run.constraints,
            runtime,
            epochs=config.epochs,
            run_dir=run.run_dir,
            callbacks=[*scores, *callbacks],
        )
    if run.run_dir is not None:
        write_atomically(run.run_dir / "model.keras", model.save, checksum=True)
    return TrainedModel(model, history, start_acc, scores[0].clusters if scores else None)


Trainer = Callable[[RunConfig, PreparedRun, RuntimeConfig], TrainedModel]

# The trainer of each method.
TRAINERS: dict[str, Trainer] = {
    "dcgmm": train_dcgmm,
    "vade": train_dcgmm,
    "pckmeans": train_pckmeans,
    "sdec": train_dec,
    "cidec": train_dec,
}


def train_prepared(
    config: RunConfig,
    run: PreparedRun,
    runtime: RuntimeConfig = RuntimeConfig(),
    callbacks: Sequence[keras.callbacks.Callback] = (),
) -> TrainedModel:
    """Trains ``config.method`` on the prepared ``run``, under the precision policy of ``config``; ``callbacks``
    (dcgmm and vade only) join the training's own."""
    if callbacks and config.method not in MIXTURE_METHODS:
        raise ValueError(f"callbacks apply to {MIXTURE_METHODS} only, not {config.method}")
    with precision_policy(config.mixed_precision):
        if callbacks:
            return train_dcgmm(config, run, runtime, callbacks)
        return TRAINERS[config.method](config, run, runtime)


def train(
    config: RunConfig,
    data: DataSplits,
    constraints: ConstraintSet,
    *,
    num_clusters: int | None = None,
    run_dir: str | Path | None = None,
    runtime: RuntimeConfig = RuntimeConfig(),
) -> TrainedModel:
    """Trains ``config.method`` on ``data.x_train`` with ``constraints`` (indexing ``data.x_train``).

    ``num_clusters`` defaults to ``config.num_clusters`` or the number of classes; with a ``run_dir`` the run
    writes its history, logs, backups and model there (and resumes from a backup of the same configuration).
    The test split is scored during training (``eval_every``) unless it is empty; the labels of the training
    split are used only by ``cluster_init="labels"``. The data is used as given (no subsets).
    """
    run = prepare_run(
        config, data, constraints=constraints, num_clusters=num_clusters, run_dir=run_dir, use_subsets=False
    )
    return train_prepared(config, run, runtime)


# --- 5. Evaluate -----------------------------------------------------------------------------------------------------


def results_row(
    config: RunConfig,
    run: PreparedRun,
    trained: TrainedModel,
    test_clusters: np.ndarray,
    train_seconds: float,
    runtime: RuntimeConfig,
) -> dict[str, Any]:
    """The results row of a trained run: its scores on the test split, the satisfaction of the training
    constraints (NaN without constraints), ``start_acc`` (the test ACC of the initial clustering), ``num_constraints``
    (the pairs answered) and ``training_pairs`` (the constraints it trained with: the answers and, with
    ``spread_neighbours``, their spread copies), its settings, ``train_seconds`` and ``config`` (``config.key()``);
    with ``num_clusters=0`` also ``chosen_k``, the K chosen from the pairs.
    """
    constraints = run.constraints
    scores = metrics.clustering_scores(run.inputs.y_test, test_clusters)
    chosen = {"chosen_k": trained.model.num_clusters} if config.num_clusters == 0 else {}
    satisfaction = float("nan")
    if len(constraints):
        train_clusters = predict_clusters(trained.model, run.inputs.x_train, runtime.eval_batch_size)
        satisfaction = metrics.constraint_satisfaction(constraints, train_clusters)
    return {
        "dataset": run.data.name,
        "method": config.method,
        "seed": config.seed,
        "num_constraints": len(run.answers),
        "training_pairs": len(constraints),
        "q": config.q,
        "alpha": float(np.abs(constraints.weight).max()) if len(constraints) else 0.0,
        "epochs": config.epochs,
        "acc": scores["acc"],
        "nmi": scores["nmi"],
        "ari": scores["ari"],
        "constraint_satisfaction": satisfaction,
        "start_acc": trained.start_acc,
        "train_seconds": round(train_seconds, 1),
        "n_train": len(run.data.x_train),
        "n_test": len(run.data.x_test),
        "config": config.key(),
        **chosen,
    }


def train_and_evaluate(
    config: RunConfig,
    data: DataSplits,
    runtime: RuntimeConfig = RuntimeConfig(),
    callbacks: Callable[[PreparedRun], Sequence[keras.callbacks.Callback]] | None = None,
) -> RunResult:
    """One run of ``config`` on ``data``: the prepared run, its training, and its results row. ``callbacks``,
    given the prepared run, makes extra callbacks for the training (dcgmm and vade)."""
    run = prepare_run(config, data, run_dir=run_dir_of(config, data.name, runtime))
    start = time.perf_counter()
    trained = train_prepared(config, run, runtime, callbacks(run) if callbacks else ())
    train_seconds = time.perf_counter() - start
    test_clusters = trained.test_clusters  # scored after the last epoch already, or not
    if test_clusters is None:
        test_clusters = predict_clusters(trained.model, run.inputs.x_test, runtime.eval_batch_size)
    row = results_row(config, run, trained, test_clusters, train_seconds, runtime)
    return RunResult(row, trained, run.inputs.y_test, test_clusters)
