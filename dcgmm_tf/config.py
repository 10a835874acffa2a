"""The settings of a run: what decides its results (:class:`RunConfig`) and what does not (:class:`RuntimeConfig`).

Both are frozen dataclasses checked on construction (a bad value raises ``ValueError`` naming the field); change
one with ``dataclasses.replace``. Each field carries its help text and its allowed values as metadata, from which
the command line (``experiments.run``) defines its flags, so a rule is written once. ``RunConfig.key()`` is a
run's identity: equal keys mean the same configuration (the seed is a results column of its own). It hashes every
field, so a new or renamed field changes every key: such a change raises ``KEY_VERSION`` and teaches
``scripts/migrate_results.py`` to bring the rows of the version before to the new one, unless the field is left
out of the hash at the value that acts as the code before it did (``UNHASHED_VALUES``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Callable
from typing import Any

# The settings' vocabularies. This module imports nothing from the library (so that reading a config or a flag
# loads no TensorFlow); the modules that act on a setting import its vocabulary from here.
KL_ESTIMATORS = ("sample", "analytic")  # the cluster KL: single-sample SGVB or closed-form expectations
PAIR_LOSSES = ("paper", "likelihood")  # the pairwise term: the paper's Eq. 10 or the links' log-likelihood
LINK_TYPES = ("both", "must", "cannot")  # which links are drawn from labels
INPUT_FEATURES = ("pixels", "hog", "hog_scaled")  # what the networks read of an image
DISTRIBUTION_STRATEGIES = ("default", "mirrored", "multiworker")  # tf.distribute strategies
START_STRATEGIES = ("gmm", "kmeans", "merge", "latent_class")  # starts of the mixture from the embeddings
LINK_START_STRATEGIES = ("merge", "latent_class")  # the starts that use the pairs
KEY_VERSION = 2  # the version of RunConfig.key(), written in every key
# Fields added within a key version, left out of the key at the value that acts as the code before them did, so
# that the rows written before keep their keys.
UNHASHED_VALUES = {"fused_adam": False}
LATENT_CLASS_STARTS = 3  # random starts of the latent class EM (3 and 10 compared: docs/findings.md)
MIXTURE_WEIGHTS = ("equal", "fitted")  # the choice of K's GMM weights: 1/K (the default) or EM's
CHOICE_RULES = ("one_se", "best")  # with both link types: the smallest K that ties the best, or the best


def settings_hash(settings: dict[str, Any]) -> str:
    """A short stable hash of JSON-serialisable settings (12 hex digits; key order does not matter)."""
    return hashlib.sha1(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:12]


def fields_hash(fields: dict[str, Any]) -> str:
    """:func:`settings_hash` of config fields, each written as on the command line (a tuple as its items' text)."""
    return settings_hash({k: [str(x) for x in v] if isinstance(v, tuple) else v for k, v in fields.items()})


METHODS = ("dcgmm", "vade", "pckmeans", "sdec", "cidec")
MIXTURE_METHODS = ("dcgmm", "vade")  # the methods with a Gaussian mixture to start and restart
CLUSTER_INITS = (*START_STRATEGIES, "labels")  # the starts of the mixture
LR_SCHEDULES = ("staircase", "cosine")
MIXED_PRECISION_POLICIES = {"off": "float32", "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}
PRECISIONS = ("auto", *MIXED_PRECISION_POLICIES)  # "auto": dcgmm_tf.runtime.resolved_precision picks bf16 or off


def setting(
    default: Any,
    help: str,
    *,
    choices: tuple | None = None,
    lower: float | None = None,
    upper: float | None = None,
    rule: tuple[Callable[[Any], bool], str] | None = None,
    kind: type | None = None,
) -> Any:
    """A config field: its default, help text and allowed values (``choices``, closed bounds ``lower``/``upper``,
    or a ``rule`` (predicate, "what it must be")); ``kind`` is the value type when the default is None."""
    # pylint: disable=redefined-builtin
    return dataclasses.field(
        default=default,
        metadata={"help": help, "choices": choices, "lower": lower, "upper": upper, "rule": rule, "kind": kind},
    )


def check_field(name: str, value: Any, metadata: dict) -> None:
    """Raises ``ValueError`` when ``value`` breaks the field's allowed values."""
    choices, lower, upper, rule = (metadata.get(k) for k in ("choices", "lower", "upper", "rule"))
    if choices is not None and value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}.")
    if lower is not None and value < lower:
        raise ValueError(f"{name} must be at least {lower}, got {value!r}.")
    if upper is not None and value > upper:
        raise ValueError(f"{name} must be at most {upper}, got {value!r}.")
    if rule is not None and not rule[0](value):
        raise ValueError(f"{name} must be {rule[1]}, got {value!r}.")


def check_fields(config: Any) -> None:
    """Casts the numeric fields to their default's type (so 300 and 300.0 give one key) and checks each field."""
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if isinstance(field.default, float) and isinstance(value, int) and not isinstance(value, bool):
            object.__setattr__(config, field.name, float(value))
        if isinstance(field.default, tuple):
            object.__setattr__(config, field.name, tuple(value))
        check_field(field.name, getattr(config, field.name), field.metadata)


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """Everything that decides a run's results.

    Defaults: the paper's Fashion-MNIST setting (its model, C-ELBO, networks, batch, optimizer and 6,000 pairs)
    with this library's recipe around it, which departs from the paper's protocol: the label-free start
    (``cluster_init="latent_class"``) restarted every 5 epochs, 15 pretraining epochs (the paper: 10) followed by
    5 epochs of tuning the autoencoder with the pairs (``pair_tuning_epochs=5``; the paper: none), 10 epochs (the
    paper: 500), a cosine learning rate (the paper: a staircase) and each answer also given to the pairs one
    nearest neighbour away from either end, at half its weight (``spread_neighbours=1``; the paper: the answers
    alone), and on a CPU with bf16 dot products the layers computed in bf16 (``mixed_precision="auto"``; the paper:
    float32). ``RunConfig.protocol("paper")`` is the paper's protocol and ``RunConfig.protocol("variant")`` the variant
    beyond it (see ``PROTOCOLS``).
    """

    # Data: what is clustered.
    dataset: str = setting(
        "fashion",
        "fashion, mnist, reuters, stl10, utkface_gender, utkface_ethnicity, a path "
        "to an .npz file, or an image folder / file,label CSV (see data/README.md).",
    )
    max_train_samples: int = setting(0, "Use a random subset of the training split (0: all).", lower=0)
    max_test_samples: int = setting(0, "Use a random subset of the test split (0: all).", lower=0)
    image_size: int = setting(64, "Side of the square images of UTKFace and of image-folder data sets.", lower=1)
    input_features: str = setting(
        "pixels",
        "What the networks read of each image: its pixels (the paper's); hog, the histograms of oriented gradients "
        "of each grey image; or hog_scaled, each HOG feature divided by its maximum over the training split (neither "
        "is the paper's: see dcgmm_tf.data.features; MLP only).",
        choices=INPUT_FEATURES,
    )

    # Pairs: which answers the run trains with.
    num_constraints: int = setting(
        6000, "Number of random pairs drawn from the labels and answered (must-links and cannot-links).", lower=0
    )
    alpha: float | None = setting(
        None,
        "Constraint confidence |W_ij|; default 1e4, or 1000*log((1-q)/q) when "
        "q > 0; with constraints_file, replaces every |W_ij| of the file (unset: the "
        "file's weights).",
        rule=(lambda v: v is None or 0 < v < math.inf, "a finite number > 0 (or unset for the default)"),
        kind=float,
    )
    q: float = setting(
        0.0,
        "Constraint noise: probability of flipping each link, in [0, 0.5).",
        rule=(lambda v: 0 <= v < 0.5, "in [0, 0.5): the probability that a constraint is wrong"),
    )
    link_type: str = setting("both", "Which links to draw.", choices=LINK_TYPES)
    transitive_closure: bool = setting(False, "Close noise-free constraints transitively.")
    constraints_file: str | None = setting(None, "CSV with columns i,j,weight indexing the training split.", kind=str)
    spread_neighbours: int = setting(
        1,
        "Spread each answer to the k nearest neighbours (Euclidean, in the input space) of either end of its pair, "
        "at spread_weight times its weight (not the paper's: see dcgmm_tf.constraints.spread; 0: off, the paper's).",
        lower=0,
    )
    spread_weight: float = setting(
        0.5,
        "With spread_neighbours: a spread pair's share of the weight of the answer it comes from.",
        rule=(lambda v: 0 < v <= 1, "in (0, 1]"),
    )

    # Model: the networks, the mixture and the C-ELBO.
    method: str = setting(
        "dcgmm",
        "dcgmm, vade (= dcgmm without constraints), or a Table 1 baseline: pckmeans, sdec, cidec.",
        choices=METHODS,
    )
    num_clusters: int = setting(
        -1,
        "Number of clusters K (-1: the number of classes; 0: chosen from the pairs on the pretrained embedding, "
        "dcgmm and vade only, see dcgmm_tf.cluster_count).",
        rule=(lambda v: v in (-1, 0) or v >= 2, "-1 (the number of classes), 0 (chosen) or at least 2"),
    )
    latent_dim: int = setting(10, "Latent dimension D.", lower=1)
    architecture: str = setting(
        "mlp",
        "Networks: the paper's MLP, or the appendix's VGG-like conv nets (image data sets only).",
        choices=("mlp", "vgg"),
    )
    vgg_filters: tuple[int, ...] = setting(
        (32, 64),
        "Filters of the VGG blocks (paper: 32,64 for 64x64x1 frames, 64,128 for faces).",
        rule=(lambda v: len(v) > 0 and min(v) >= 1, "one or more positive filter counts"),
    )
    kl_estimator: str = setting(
        "sample",
        "Cluster KL estimator: closed-form Gaussian expectations (VaDE) or single-sample SGVB.",
        choices=KL_ESTIMATORS,
    )
    pair_loss: str = setting(
        "paper",
        "Pairwise term: paper (Eq. 10, -W_ij sum_k p(k|x_i) p(k|x_j)) or likelihood (not the paper's: the "
        "log-likelihood of each link under the noise its |W_ij| implies, whose force does not vanish on confident "
        "disagreements; see dcgmm_tf.losses.pair_log_likelihood_term).",
        choices=PAIR_LOSSES,
    )
    embedding_pair_weight: float = setting(
        0.0,
        "Weight of the pair tuning's contrastive term on the embedding, kept in the C-ELBO training on every batch "
        "of pairs (not the paper's: see dcgmm_tf.losses.batch_embedding_pair_term; 0: off, the paper's).",
        lower=0,
    )
    mixed_precision: str = setting(
        "auto",
        "Mixed precision: auto (bf16 on a CPU with bf16 dot products, AMX or AVX512-BF16, and no GPU in sight, "
        "else off; not the paper's), off (float32, the paper's), bf16 (CPUs with AVX512-BF16/AMX, TPUs), fp16 (GPUs, "
        "with loss scaling); variables and losses stay float32.",
        choices=PRECISIONS,
    )

    # Recipe: pretraining, tuning with the pairs, the start and the fit.
    seed: int = setting(
        0, "Seed of the data subsets, constraints, initialisation and batches (not part of key()).", lower=0
    )
    pretrain_epochs: int = setting(15, "Autoencoder pretraining epochs (the paper: 10).", lower=0)
    pretrain_batch_size: int = setting(256, "Autoencoder pretraining batch size.", lower=1)
    fused_adam: bool = setting(
        True,
        "Adam in the pretraining and the tuning with the pairs as TensorFlow's fused kernel (dcgmm_tf.optimizers."
        "FusedAdam, as in the training: Keras' update to rounding, in about half its time); off: Keras' Adam there.",
    )
    pretrain_seed: int = setting(
        -1,
        "Seed of the pretraining (initial weights, autoencoder, GMM); -1: the run's seed. Fixing it starts "
        "every run from the same pretrained model, as the paper's code does.",
        rule=(lambda v: v >= -1, "-1 (the run's seed) or a seed >= 0"),
    )
    pair_tuning_epochs: int = setting(
        5,
        "Epochs of tuning the pretrained autoencoder with the pairs before the start: reconstruction plus a "
        "contrastive pair term on the embedding (not the paper's: see dcgmm_tf.pair_tuning; 0: off, the paper's).",
        lower=0,
    )
    pair_tuning_weight: float = setting(
        100.0,
        "With pair_tuning_epochs: the weight of the pair term against the mean reconstruction loss.",
        rule=(lambda v: 0 < v < math.inf, "a finite number > 0"),
    )
    cluster_init: str = setting(
        "latent_class",
        "Initial mixture (dcgmm, vade): gmm (the paper's protocol: a diagonal GMM on the pretrained "
        "embeddings), kmeans (not the paper's: k-means clusters on them, see dcgmm_tf.starts.kmeans_start), "
        "merge or latent_class (init_components GMM components grouped by the constraints, see "
        "dcgmm_tf.starts; without constraints the same as gmm), or labels (class means/variances of the "
        "embeddings of labelled training samples: all of them as a diagnostic, a few per class with "
        "init_labels_per_class as a semi-supervised start; see docs/reproduction.md).",
        choices=CLUSTER_INITS,
    )
    init_labels_per_class: int = setting(
        0,
        "With cluster_init=labels: use this many labelled training samples per class (drawn with the seed; 0: all).",
        rule=(lambda v: v == 0 or v >= 2, "0 (all labels) or at least 2"),
    )
    init_components: int = setting(
        0,
        "With cluster_init=merge or latent_class: number K' of GMM components that the constraints group into K "
        "clusters (0: 10 K, at most one per 50 training samples).",
        rule=(lambda v: v == 0 or v >= 2, "0 (automatic) or at least 2"),
    )
    init_em_starts: int = setting(
        LATENT_CLASS_STARTS,
        "With cluster_init=latent_class (dcgmm): random starts of the EM that groups the components by the pairs, "
        "at the start and every restart (other starts and the baselines ignore it).",
        lower=1,
    )
    restart_every: int = setting(
        5,
        "With cluster_init=merge or latent_class and constraints: restart the mixture by the same strategy on "
        "the current embeddings every this many epochs and after the last (0: never; the other starts take 0 or "
        "the default and do not restart; the baselines ignore it).",
        lower=0,
    )
    epochs: int = setting(
        10,
        "Training epochs (the paper: 1000 for MNIST, 500 otherwise; 10 with the default recipe, see "
        "docs/reproduction.md); for sdec/cidec the maximum clustering epochs, for pckmeans the "
        "maximum iterations.",
        lower=1,
    )
    batch_size: int = setting(256, "Training batch size.", lower=2)
    learning_rate: float = setting(1e-3, "Initial Adam learning rate.", rule=(lambda v: v > 0, "> 0"))
    lr_decay: float = setting(0.9, "Learning-rate decay factor.", rule=(lambda v: 0 < v <= 1, "in (0, 1]"))
    lr_decay_epochs: int = setting(20, "Epochs between learning-rate decays.", lower=1)
    lr_schedule: str = setting(
        "cosine",
        "Learning-rate schedule: staircase (the paper's: times lr_decay every lr_decay_epochs) or "
        "cosine (not the paper's: a cosine from learning_rate down to 1 % of it over the run's epochs).",
        choices=LR_SCHEDULES,
    )
    layout: str = setting(
        "separate",
        "Where constraint pairs go: extra batches of B/2 pairs (paper) or spread over all batches.",
        choices=("separate", "spread"),
    )
    clipnorm: float = setting(
        300.0, "Clip each step's gradient to this global norm (0: no clipping); see README.", lower=0
    )

    # Choosing K from the pairs (num_clusters=0).
    choice_weights: str = setting(
        "equal",
        "With num_clusters=0: the weights of the GMMs the choice of K scores, 'equal' (1/K, the prior DC-GMM trains "
        "with) or 'fitted' (EM's). See dcgmm_tf.cluster_count.choose_num_clusters.",
        choices=MIXTURE_WEIGHTS,
    )
    choice_splits: int = setting(
        5,
        "With num_clusters=0: random splits of the pairs into folds; the K that tie the best on the first, and "
        "their neighbours, are scored again on the others and chosen on each pair's mean score (1: one split). "
        "See dcgmm_tf.cluster_count.choose_num_clusters.",
        lower=1,
    )
    choice_rule: str = setting(
        "best",
        "With num_clusters=0 and pairs of both link types: 'best', the K of the best score averaged over the "
        "choice_splits among the first split's tie and its neighbours, or 'one_se', the smallest K that ties the "
        "best (the one-standard-error rule). See "
        "dcgmm_tf.cluster_count.choose_num_clusters.",
        choices=CHOICE_RULES,
    )
    probe_epochs: int = setting(
        0,
        "With num_clusters=0 and pairs of both link types: train probes at the K chosen on the embedding and its "
        "neighbours for this many epochs and keep the K whose held-out pairs score best (0: no probes, the "
        "embedding's choice; measured, not better: docs/your-data.md, dcgmm_tf.cluster_count.probe_num_clusters).",
        lower=0,
    )

    # Baselines of Table 1.
    pckmeans_weight: float = setting(
        1.0, "pckmeans: penalty per violated constraint (squared-distance units).", lower=0
    )
    layer_pretrain_epochs: int = setting(50, "sdec/cidec: denoising-autoencoder epochs per layer (paper: 50).", lower=0)
    finetune_epochs: int = setting(100, "sdec/cidec: autoencoder fine-tuning epochs (paper: 100).", lower=0)
    dec_tol: float = setting(1e-3, "sdec/cidec: stop when fewer than this share of assignments change.", lower=0)
    sdec_lambda: float = setting(1e-5, "sdec: weight of the pairwise distance loss.", lower=0)
    cidec_gamma: float = setting(0.1, "cidec: weight of the clustering KL next to the reconstruction (IDEC).", lower=0)
    cidec_ml_penalty: float = setting(0.1, "cidec: weight of the must-link loss.", lower=0)
    cidec_cl_penalty: float = setting(1.0, "cidec: weight of the cannot-link loss.", lower=0)

    def __post_init__(self):
        check_fields(self)
        defaults = RunConfig.__dataclass_fields__
        if self.method not in MIXTURE_METHODS:  # the baselines have no mixture to start
            for name in ("cluster_init", "init_components"):
                if getattr(self, name) != defaults[name].default:
                    raise ValueError(f"{name} applies to method dcgmm or vade only (method is {self.method}).")
            if self.num_clusters == 0:
                raise ValueError(
                    f"num_clusters=0 (chosen from the pairs) applies to dcgmm or vade only, not {self.method}."
                )
        restarts = self.restart_every not in (0, defaults["restart_every"].default)
        if restarts and self.method in MIXTURE_METHODS and self.cluster_init not in LINK_START_STRATEGIES:
            raise ValueError(
                f"restart_every={self.restart_every} needs cluster_init merge or latent_class (the other starts "
                f"take 0 or the default, and do not restart), got cluster_init {self.cluster_init}."
            )
        if self.input_features != "pixels" and self.architecture != "mlp":
            raise ValueError(
                f"input_features={self.input_features} needs architecture mlp (no images reach the network)."
            )
        if self.init_labels_per_class and self.cluster_init != "labels":
            raise ValueError("init_labels_per_class needs cluster_init labels.")
        if self.constraints_file and self.max_train_samples:
            raise ValueError(
                "constraints_file indexes the whole training split: it cannot be combined with max_train_samples."
            )

    @classmethod
    def protocol(cls, name: str, **changes: Any) -> RunConfig:
        """The config of a named protocol (see ``PROTOCOLS``) with ``changes`` on top.

        Args:
          name: ``"default"``, ``"paper"`` or ``"variant"``.
          **changes: Fields that replace the protocol's values.

        Returns:
          The config.

        Raises:
          ValueError: For an unknown protocol name or a bad field value.
        """
        if name not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {list(PROTOCOLS)}, got {name!r}.")
        return cls(**{**PROTOCOLS[name], **changes})

    def key(self) -> str:
        """The configuration's identity: ``"v<KEY_VERSION>-"`` and a hash of every field but the seed, each written
        as on the command line (a list as its comma-separated items). Rows written under keys of an earlier version
        are brought to this one by ``scripts/migrate_results.py``."""
        fields = dataclasses.asdict(self)
        del fields["seed"]
        for name, value in UNHASHED_VALUES.items():
            if fields[name] == value:
                del fields[name]
        return f"v{KEY_VERSION}-{fields_hash(fields)}"


# Named protocols: the fields whose values differ from RunConfig's defaults. "default" is this library's recipe (15
# pretraining epochs, 5 of tuning with the pairs, 10 epochs with restarts every 5, the cosine, answers spread to
# nearest neighbours, bf16 where the CPU multiplies it in hardware, the fused Adam throughout); "paper" the paper's
# Fashion-MNIST protocol (float32, Keras' Adam before the training, its GMM start, 10 pretraining epochs, no tuning,
# 500 epochs, the staircase decay, the answers alone); "variant" goes beyond the paper: the log-likelihood pair term,
# each image's HOG features scaled to their training maxima instead of its pixels (grey images of about 28 x 28
# pixels) and 20 epochs, in float32 with Keras' Adam before the training.
PAPER_PROTOCOL = {
    "mixed_precision": "off",
    "fused_adam": False,
    "cluster_init": "gmm",
    "pretrain_epochs": 10,
    "pair_tuning_epochs": 0,
    "epochs": 500,
    "lr_schedule": "staircase",
    "spread_neighbours": 0,
}
VARIANT = {
    "mixed_precision": "off",
    "fused_adam": False,
    "pair_loss": "likelihood",
    "input_features": "hog_scaled",
    "epochs": 20,
}
PROTOCOLS = {"default": {}, "paper": PAPER_PROTOCOL, "variant": VARIANT}


@dataclasses.dataclass(frozen=True)
class RuntimeConfig:
    """Settings that do not change a run's results (apart from op-level nondeterminism): resources, paths, output."""

    threads: int = setting(0, "TensorFlow intra-op threads (0: all cores).", lower=0)
    deterministic: bool = setting(
        True, "TensorFlow op determinism: the same seed on the same machine gives the same results row."
    )
    jit_compile: bool = setting(False, "Compile the training step with XLA (needs deterministic off).")
    strategy: str = setting(
        "default",
        "tf.distribute: one device, all local GPUs (MirroredStrategy) or several "
        "machines (MultiWorkerMirroredStrategy, cluster from TF_CONFIG); see "
        "docs/distributed.md.",
        choices=DISTRIBUTION_STRATEGIES,
    )
    steps_per_execution: int = setting(
        0,
        "Training steps per compiled call of fit: Keras' loop, the callbacks' batch hooks and the NaN guard's "
        "check of the loss run once per call; the results do not change (see docs/performance.md). 0: 32, or 1 "
        "for a fit of fewer than 256 steps, where tracing the multi-step loop costs more than it saves. An epoch "
        "of at most that many steps is one call.",
        lower=0,
    )
    eval_every: int = setting(10, "Evaluate test ACC/NMI/ARI every this many epochs (logged to history).", lower=1)
    eval_batch_size: int = setting(1024, "Batch size of predictions (test metrics, results).", lower=1)
    verbose: int = setting(2, "Keras verbosity: 0 silent, 1 progress bar, 2 one line per epoch.", lower=0, upper=2)
    output_dir: str = setting("results", "Where results.csv, summary.csv and per-run logs go.")
    data_dir: str | None = setting(None, "Directory searched first for data files.", kind=str)
    cache_dir: str | None = setting(None, "Pretrained-weights cache (default: <repo>/data/cache).", kind=str)
    cache: bool = setting(True, "Reuse and keep pretrained weights in cache_dir (off: pretrain every time).")

    def __post_init__(self):
        check_fields(self)
        if self.jit_compile and self.deterministic:
            raise ValueError("jit_compile needs deterministic off: XLA has no deterministic mode.")
