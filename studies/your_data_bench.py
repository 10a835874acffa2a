r"""The estimator's defaults on nineteen data sets, against k-means, a Gaussian mixture and PCKMeans.

    python -m studies.your_data_bench --output_dir=results/your_data_bench --seeds=0,1,2 --pairs=0,100,500
    python -m studies.your_data_bench --auto_k ...                 # also n_clusters="auto" at the most pairs
    python -m studies.your_data_bench --tiny --seeds=0 --pairs=0,50 --output_dir=/tmp/bench   # a quick run
    python -m studies.your_data_bench --params='{"hidden_units": [64, 64]}' --output_dir=/tmp/width   # one setting

Each set (:data:`SETS`) belongs to one half (:data:`HALVES`): the estimator's defaults are tuned on the ``tuning``
half and reported on the ``reporting`` half. For every set, seed and count of ``--pairs``, that many random pairs
are drawn among the samples and answered from the labels (must-link: same label, else cannot-link); every method
clusters all samples with the true K and is scored by ARI against the labels (transductive):

- ``dcgmm``: ``DCGMMClustering(n_clusters=K, random_state=seed)`` with its defaults, fitted with the pairs;
- ``dcgmm_deep``: that fit's deep model's clusters (``start_labels_[start_]``), what ``input_fallback=False``
  returns, and ``dcgmm_one_start``: its first start alone (``start_labels_["embedding"]``), what
  ``input_start=False, input_fallback=False`` returns; ``dcgmm_input``: the clusters of its input-space mixture
  (``input_mixture_``, where the fallback scored one); all recorded from the same fit (no time of their own);
- ``kmeans``: ``KMeans(K, n_init=10)``; ``gmm``: ``GaussianMixture(K, n_init=5)``, the better ARI of the full and
  the diagonal covariance (the note says which). Neither takes pairs: one row per set and seed, under 0 pairs,
  which the Markdown table repeats on every pair count;
- ``pckmeans``: ``dcgmm_tf.baselines.PCKMeans`` (its defaults) with the same pairs, for counts above 0;
- ``dcgmm_auto`` (``--auto_k``): ``DCGMMClustering(n_clusters="auto")`` at the largest count, with the K it chose.

One row per fit is appended to ``<output_dir>/results.csv`` as it finishes (rows already there are skipped: a
stopped run resumes); ``<output_dir>/summary.csv`` gets the mean and standard deviation of the ARI over the seeds,
and the Markdown table and the comparisons of the reporting half are printed. Use another ``--output_dir`` for
``--tiny``: its rows would stand for the full fits.
"""

from __future__ import annotations

import json
import math
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from absl import app, flags, logging

from experiments import results

FLAGS = flags.FLAGS

Data = tuple[np.ndarray, np.ndarray]  # X [N, F] float64, labels [N] int

# The halves were fixed before any default was changed for this benchmark: the defaults are tuned on the "tuning"
# half only, and the "reporting" half is what is reported. Eight sets each, and three more tuning sets of more than 50
# features (subspace_60d and two of text, docstrings_tf and docstrings_libs); do not move a set between halves.
HALVES = {
    "iris": "tuning",
    "breast_cancer": "tuning",
    "blobs_2d": "tuning",
    "blobs_20d": "tuning",
    "aniso_2d": "tuning",
    "classification_3": "tuning",
    "student_t_10d": "tuning",
    "fashion_2000": "tuning",
    "wine": "reporting",
    "digits": "reporting",
    "blobs_5d": "reporting",
    "blobs_100d": "reporting",
    "aniso_10d": "reporting",
    "classification_4": "reporting",
    "classification_5": "reporting",
    "docstrings": "reporting",
    "subspace_60d": "tuning",
    "docstrings_tf": "tuning",
    "docstrings_libs": "tuning",
}
TINY_SETS = ("iris", "blobs_2d", "classification_3")  # --tiny: small sets, fast fits
TINY_PARAMS = {"epochs": 2, "pretrain_epochs": 2, "choice_tuning_epochs": 1}  # --tiny: the estimator's settings
# Images in [0, 1] and text features, kept as they are.
UNSCALED = ("digits", "fashion_2000", "docstrings", "docstrings_tf", "docstrings_libs")
# The sets the estimator models with the Gaussian likelihood (those of images in [0, 1] are Bernoulli): where its
# input fallback applies.
GAUSSIAN_SETS = tuple(name for name in HALVES if name not in ("digits", "fashion_2000"))
ONE_START = "dcgmm_one_start"  # the estimator's fit from its first start alone: input_start=False
DEEP = "dcgmm_deep"  # the deep model's clusters of that fit, whichever it chose: input_fallback=False
INPUT = "dcgmm_input"  # the clusters of that fit's input-space mixture, whichever it chose
DERIVED = {ONE_START: "the embedding's start", DEEP: "the deep model", INPUT: "the input's mixture"}  # from dcgmm
PAIR_FREE = ("kmeans", "gmm")  # methods that take no pairs: one row per set and seed, under 0 pairs
METHODS = ("dcgmm", ONE_START, DEEP, INPUT, "dcgmm_auto", *PAIR_FREE, "pckmeans")
COLUMNS = (
    "dataset",
    "half",
    "n_samples",
    "n_features",
    "n_classes",
    "seed",
    "num_pairs",
    "method",
    "ari",
    "clusters_used",
    "seconds",
    "warnings",
    "note",
    "chosen_k",
)
NEAR = 0.02  # dcgmm "holds its own" without pairs when its ARI >= the best of k-means and the GMM - NEAR

# --- the data sets -----------------------------------------------------------------------------------------------


def _bundled(name: str) -> Data:
    from sklearn import datasets

    x, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    return (x / 16.0 if name == "digits" else x), y


def _blob_sizes(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """3-8 clusters of unequal sizes (about 200-1,500 samples in all, at least 15 each) and spreads (0.5-2.5)."""
    k = int(rng.integers(3, 9))
    shares = rng.dirichlet(np.full(k, 2.0))
    sizes = np.maximum(np.round(shares * int(rng.integers(200, 1501))).astype(int), 15)
    return sizes, rng.uniform(0.5, 2.5, size=k)


def _half_width(dim: int) -> float:
    """Half the side of the box of the centres: the expected distance between two centres (about 11.5, against
    spreads of 0.5-2.5) is the same in every dimension, so that more dimensions do not make the clusters easy."""
    return 10.0 * math.sqrt(2.0 / dim)


def blobs(dim: int, set_seed: int) -> Data:
    """Gaussian blobs of unequal sizes and spreads in ``dim`` dimensions, drawn from ``set_seed`` alone."""
    from sklearn.datasets import make_blobs

    rng = np.random.default_rng(set_seed)
    sizes, spreads = _blob_sizes(rng)
    h = _half_width(dim)
    x, y = make_blobs(
        sizes.tolist(), dim, cluster_std=spreads, center_box=(-h, h), random_state=int(rng.integers(2**31))
    )
    return x, y


def anisotropic_blobs(dim: int, set_seed: int) -> Data:
    """:func:`blobs` times a random linear map (``dim`` x ``dim``, drawn from ``set_seed`` too)."""
    x, y = blobs(dim, set_seed)
    rng = np.random.default_rng([set_seed, 1])
    return x @ (rng.normal(size=(dim, dim)) / math.sqrt(dim)), y


def student_t_blobs(dim: int, set_seed: int, df: float = 3.0) -> Data:
    """Clusters with heavy tails: centres in the box of :func:`blobs`, Student-t noise of ``df`` degrees of freedom
    scaled by each cluster's spread; drawn from ``set_seed`` alone."""
    rng = np.random.default_rng(set_seed)
    sizes, spreads = _blob_sizes(rng)
    h = _half_width(dim)
    centres = rng.uniform(-h, h, size=(len(sizes), dim))
    y = np.repeat(np.arange(len(sizes)), sizes)
    x = centres[y] + spreads[y, None] * rng.standard_t(df, size=(len(y), dim))
    order = rng.permutation(len(y))
    return x[order], y[order]


def subspace_blobs(dim: int, set_seed: int, rank: int = 5) -> Data:
    """Clusters along subspaces: each cluster's samples vary mostly in ``rank`` random directions of its own (scaled
    by its spread) plus isotropic noise of half its spread, about centres in a box 0.35 times the side of
    :func:`blobs`'s, so that the clusters overlap in every single feature; drawn from ``set_seed`` alone."""
    rng = np.random.default_rng(set_seed)
    sizes, spreads = _blob_sizes(rng)
    h = 0.35 * _half_width(dim)
    parts = []
    for size, spread in zip(sizes, spreads):
        centre = rng.uniform(-h, h, size=dim)
        directions = 1.5 * spread * rng.normal(size=(dim, rank))
        parts.append(
            centre + rng.normal(size=(size, rank)) @ directions.T + 0.5 * spread * rng.normal(size=(size, dim))
        )
    y = np.repeat(np.arange(len(sizes)), sizes)
    order = rng.permutation(len(y))
    return np.concatenate(parts)[order], y[order]


def classification(
    set_seed: int, n_classes: int, n_features: int, n_informative: int, n_redundant: int = 0, clusters: int = 1
) -> Data:
    """scikit-learn's ``make_classification``: ``n_informative`` informative and ``n_redundant`` redundant features
    (combinations of them), the rest noise; 400-1,500 samples, unequal classes and the class separation (1-2.5)
    drawn from ``set_seed``, no label noise."""
    from sklearn.datasets import make_classification

    rng = np.random.default_rng(set_seed)
    weights = rng.dirichlet(np.full(n_classes, 4.0))
    x, y = make_classification(
        int(rng.integers(400, 1501)),
        n_features,
        n_informative=n_informative,
        n_redundant=n_redundant,
        n_classes=n_classes,
        n_clusters_per_class=clusters,
        weights=weights.tolist(),
        flip_y=0.0,
        class_sep=float(rng.uniform(1.0, 2.5)),
        random_state=int(rng.integers(2**31)),
    )
    return x, y


def fashion_subset(size: int = 2000, subset_seed: int = 784) -> Data | None:
    """``size`` Fashion-MNIST test images (a fixed random subset) as 784 features in [0, 1]; None, with a warning,
    when the files are not found (see ``dcgmm_tf.data.load_dataset`` for where they are searched)."""
    from dcgmm_tf.data import load_dataset

    try:
        data = load_dataset("fashion", download=False)
    except (FileNotFoundError, ValueError, OSError) as error:
        logging.warning("Fashion-MNIST is skipped: its files are not found or not readable (%s)", str(error)[:300])
        return None
    pick = np.sort(np.random.default_rng(subset_seed).choice(len(data.y_test), size, replace=False))
    return data.x_test[pick].astype(np.float64), data.y_test[pick].astype(np.int64)


# The text sets: documents with their labels, in fixed files (studies/data/<name>.json.xz), so that a set does not
# change with the packages installed. They are docstrings (of at least 200 characters before their indentation was
# removed) of packages' public functions and classes and the classes' own public methods, each text once and under one
# label, at most 300 of a label (a fixed random subset): numpy, scipy, scikit-learn and pandas (docstrings); matplotlib,
# Keras and TensorFlow (docstrings_tf); Pillow, TensorFlow Probability's distributions, TensorBoard and four
# standard-library packages under one label (docstrings_libs). studies/README.md says which versions they come from.
TEXT_DATA = Path(__file__).resolve().parent / "data"


def text_corpus(name: str) -> tuple[list[str], np.ndarray, list[str]]:
    """The documents of the text set ``name``, their labels [N] int64 and the labels' names, from its file in
    :data:`TEXT_DATA`."""
    import json
    import lzma

    with lzma.open(TEXT_DATA / f"{name}.json.xz", "rt", encoding="utf-8") as file:
        corpus = json.load(file)
    return corpus["documents"], np.asarray(corpus["labels"], np.int64), corpus["label_names"]


def text_set(name: str, dims: int = 100) -> Data:
    """The documents of :func:`text_corpus` as tf-idf features (2,000 terms, English stop words) reduced to ``dims``
    dimensions by a truncated SVD, with their labels."""
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    documents, labels, _ = text_corpus(name)
    tfidf = TfidfVectorizer(max_features=2000, stop_words="english").fit_transform(documents)
    x = TruncatedSVD(dims, random_state=0).fit_transform(tfidf)
    return x.astype(np.float64), labels


# Each set's loader; the synthetic sets are drawn from fixed seeds of their own (the same set on every run seed).
SETS: dict[str, Callable[[], Data | None]] = {
    "iris": lambda: _bundled("iris"),
    "wine": lambda: _bundled("wine"),
    "breast_cancer": lambda: _bundled("breast_cancer"),
    "digits": lambda: _bundled("digits"),
    "blobs_2d": lambda: blobs(2, 102),
    "blobs_5d": lambda: blobs(5, 105),
    "blobs_20d": lambda: blobs(20, 120),
    "blobs_100d": lambda: blobs(100, 200),
    "aniso_2d": lambda: anisotropic_blobs(2, 302),
    "aniso_10d": lambda: anisotropic_blobs(10, 310),
    "student_t_10d": lambda: student_t_blobs(10, 410),
    "classification_3": lambda: classification(503, 3, 10, 4),
    "classification_4": lambda: classification(504, 4, 30, 6, n_redundant=4, clusters=2),
    "classification_5": lambda: classification(505, 5, 60, 10),
    "fashion_2000": fashion_subset,
    "docstrings": lambda: text_set("docstrings"),
    "subspace_60d": lambda: subspace_blobs(60, 601),
    "docstrings_tf": lambda: text_set("docstrings_tf"),
    "docstrings_libs": lambda: text_set("docstrings_libs"),
}


def load_set(name: str) -> Data | None:
    """The set ``name`` as (X float64, labels int64), standardised unless in :data:`UNSCALED`; None when its
    files are missing (Fashion-MNIST)."""
    from sklearn.preprocessing import StandardScaler

    data = SETS[name]()
    if data is None:
        return None
    x, y = np.asarray(data[0], np.float64), np.asarray(data[1], np.int64)
    return (x if name in UNSCALED else StandardScaler().fit_transform(x)), y


def benchmark_sets(names: Sequence[str] | None = None) -> dict[str, Data]:
    """The sets ``names`` (default: all of :data:`SETS`) that could be loaded, as :func:`load_set` gives them."""
    loaded = {name: load_set(name) for name in (SETS if names is None else names)}
    return {name: data for name, data in loaded.items() if data is not None}


# --- the fits ----------------------------------------------------------------------------------------------------


def draw_pairs(y: np.ndarray, count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``count`` distinct random pairs of samples (the paper's draw, ``ConstraintSet.from_labels``), answered from
    the labels ``y``: the must-links and the cannot-links, each an int array of shape [n, 2]."""
    from dcgmm_tf.constraints import ConstraintSet

    pairs = ConstraintSet.from_labels(y, count, seed=seed)
    ij = np.stack([pairs.i, pairs.j], axis=1).astype(np.int64)
    return ij[pairs.must_link_mask], ij[pairs.cannot_link_mask]


def _measured(fit: Callable[[], tuple[np.ndarray, dict]], y: np.ndarray) -> dict:
    """Runs ``fit`` (labels, other columns) and measures its ARI, clusters used, seconds and warnings; a fit that
    raises is a row with ARI NaN and the error in its note."""
    from sklearn.metrics import adjusted_rand_score

    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            labels, extra = fit()
            row = {"ari": float(adjusted_rand_score(y, labels)), "clusters_used": len(np.unique(labels)), **extra}
        except Exception as error:  # noqa: BLE001 -- a failed fit is a result of the defaults too
            row = {"ari": float("nan"), "clusters_used": "", "note": f"error {type(error).__name__}: {error}"[:300]}
    row["seconds"] = round(time.perf_counter() - start, 2)
    row["warnings"] = len(caught)
    if caught:
        kinds = list(dict.fromkeys(f"{w.category.__name__}: {str(w.message)[:100]}" for w in caught))
        row["note"] = "; ".join(filter(None, [row.get("note", ""), "warned: " + " | ".join(kinds[:3])]))
    return row


def _dcgmm(
    x: np.ndarray, k: int | str, seed: int, ml: np.ndarray | None, cl: np.ndarray | None, params: dict
) -> Callable[[], tuple[np.ndarray, dict]]:
    from dcgmm_tf import DCGMMClustering  # imported before the fit: its time and warnings are not the fit's

    def fit() -> tuple[np.ndarray, dict]:
        est = DCGMMClustering(n_clusters=k, random_state=seed, **params).fit(x, ml=ml, cl=cl)
        s = est.schedule_
        note = (
            f"{est.likelihood_}, units {'-'.join(map(str, est.hidden_units_))}, "
            f"epochs {s.epochs}+{s.pretrain_epochs} pretraining, batch {s.batch_size}"
        )
        note += f", kept the {est.start_} start, labels from the {est.chosen_} model"
        if est.mixture_scores_:
            note += f" (scores: deep {est.mixture_scores_['deep']:.6g}, input {est.mixture_scores_['input']:.6g})"
        derived = {ONE_START: est.start_labels_["embedding"], DEEP: est.start_labels_[est.start_]}
        if est.input_mixture_ is not None:
            derived[INPUT] = est.input_mixture_.probabilities.argmax(-1)
        extra = {"note": note, "derived": derived}
        if k == "auto":
            extra["chosen_k"] = int(est.n_clusters_)
            extra["note"] += f", tied K {' '.join(map(str, est.cluster_count_.tied))}"
        return est.labels_, extra

    return fit


def _kmeans(x: np.ndarray, k: int, seed: int) -> Callable[[], tuple[np.ndarray, dict]]:
    from sklearn.cluster import KMeans

    def fit() -> tuple[np.ndarray, dict]:
        return KMeans(k, n_init=10, random_state=seed).fit_predict(x), {}

    return fit


def _gmm(x: np.ndarray, y: np.ndarray, k: int, seed: int) -> Callable[[], tuple[np.ndarray, dict]]:
    """The better (by ARI) of a full- and a diagonal-covariance GMM; the note gives both."""
    from sklearn.metrics import adjusted_rand_score
    from sklearn.mixture import GaussianMixture

    def fit() -> tuple[np.ndarray, dict]:
        fitted, notes = {}, []
        for covariance in ("full", "diag"):
            try:
                labels = GaussianMixture(k, covariance_type=covariance, n_init=5, random_state=seed).fit_predict(x)
            except (ValueError, np.linalg.LinAlgError) as error:  # an ill-defined covariance
                notes.append(f"{covariance} failed: {type(error).__name__}")
                continue
            fitted[covariance] = (adjusted_rand_score(y, labels), labels)
            notes.append(f"{covariance} {fitted[covariance][0]:.3f}")
        if not fitted:
            raise ValueError("; ".join(notes))
        best = max(fitted, key=lambda c: fitted[c][0])
        return fitted[best][1], {"note": f"best {best} ({', '.join(notes)})"}

    return fit


def _pckmeans(
    x: np.ndarray, k: int, seed: int, ml: np.ndarray, cl: np.ndarray
) -> Callable[[], tuple[np.ndarray, dict]]:
    from dcgmm_tf.baselines import PCKMeans

    def fit() -> tuple[np.ndarray, dict]:
        est = PCKMeans(k, seed=seed).fit(x, ml=ml, cl=cl)
        return est.labels_, {"note": f"{est.n_iter_} iterations{'' if est.converged_ else ', not converged'}"}

    return fit


def _fit_of(
    method: str, x: np.ndarray, y: np.ndarray, seed: int, count: int, params: dict
) -> Callable[[], tuple[np.ndarray, dict]]:
    """The fit of ``method`` (one of :data:`METHODS`) with ``count`` pairs drawn with ``seed``, at the true K."""
    k = len(np.unique(y))
    ml, cl = draw_pairs(y, count, seed) if count else (None, None)
    if method in ("dcgmm", "dcgmm_auto"):
        return _dcgmm(x, k if method == "dcgmm" else "auto", seed, ml, cl, params)
    if method == "pckmeans":
        return _pckmeans(x, k, seed, ml, cl)
    return _kmeans(x, k, seed) if method == "kmeans" else _gmm(x, y, k, seed)


def _key(dataset: Any, seed: Any, num_pairs: Any, method: Any) -> tuple[str, int, int, str]:
    return str(dataset), int(seed), int(num_pairs), str(method)


def finished(csv_path: Path) -> set[tuple[str, int, int, str]]:
    """The (dataset, seed, num_pairs, method) of the rows already in ``csv_path``."""
    rows = results.read_rows(csv_path, renamed={})  # num_pairs: the estimator's pairs, kept as named
    if rows.empty:
        return set()
    return {_key(*r) for r in rows[["dataset", "seed", "num_pairs", "method"]].itertuples(index=False)}


def run_bench(
    output_dir: Path,
    seeds: Sequence[int],
    pairs: Sequence[int],
    *,
    auto_k: bool = False,
    tiny: bool = False,
    datasets: Sequence[str] | None = None,
    params: dict[str, Any] | None = None,
) -> pd.DataFrame:
    """Fits every method on each set, seed and pair count into ``<output_dir>/results.csv`` (rows already there
    are skipped), writes ``summary.csv`` beside it and returns the summary (:func:`summarise`).

    Args:
      output_dir: Folder of the CSV files.
      seeds: Run seeds: of the pairs' draw and of every method.
      pairs: Pair counts (0: no pairs).
      auto_k: Also fit ``n_clusters="auto"`` at the largest pair count (method ``dcgmm_auto``).
      tiny: The quick mode: the sets :data:`TINY_SETS` only, the first seed, the estimator with
        :data:`TINY_PARAMS`.
      datasets: The sets to run (default: all of :data:`SETS`, or :data:`TINY_SETS` with ``tiny``).
      params: ``DCGMMClustering`` parameters in place of its defaults (a study of one setting; over
        :data:`TINY_PARAMS` with ``tiny``), but for ``n_clusters`` and ``random_state``.

    Raises:
      ValueError: When ``params`` sets ``n_clusters`` or ``random_state``.
    """
    from sklearn.metrics import adjusted_rand_score

    csv_path = output_dir / "results.csv"
    results.require_columns(csv_path, ("dataset", "seed", "num_pairs", "method", "ari"))
    names = list(datasets or (TINY_SETS if tiny else SETS))
    seeds = list(seeds)[:1] if tiny else list(seeds)
    fixed = {"n_clusters", "random_state"} & set(params or {})
    if fixed:
        raise ValueError(f"params cannot set {', '.join(sorted(fixed))}: the benchmark sets them per fit")
    params = {**(TINY_PARAMS if tiny else {}), **(params or {})}
    counts = sorted(set(int(p) for p in pairs))
    done = finished(csv_path)
    for name in names:
        wanted = [_key(name, s, c, m) for s in seeds for c, m in _planned(counts, auto_k)]
        if all(key in done for key in wanted):
            continue
        data = load_set(name)
        if data is None:
            continue
        x, y = data
        k = len(np.unique(y))
        about = dict(dataset=name, half=HALVES[name], n_samples=len(x), n_features=x.shape[1], n_classes=k, chosen_k="")
        for seed in seeds:
            for count, method in _planned(counts, auto_k):
                key = _key(name, seed, count, method)
                if key in done:
                    continue
                fit = _fit_of(method, x, y, seed, count, params)
                row = {**about, "seed": seed, "num_pairs": count, "method": method, "note": "", **_measured(fit, y)}
                derived = row.pop("derived", {}) if method == "dcgmm" else {}
                results.append_row(csv_path, {c: row.get(c, "") for c in COLUMNS})
                done.add(key)
                for other, labels in derived.items():  # the same fit's other clusterings
                    single = {**row, "method": other, "ari": float(adjusted_rand_score(y, labels))}
                    single.update(clusters_used=len(np.unique(labels)), seconds="", note=DERIVED[other])
                    results.append_row(csv_path, {c: single.get(c, "") for c in COLUMNS})
                    done.add(_key(name, seed, count, other))
                print(
                    f"{name} ({HALVES[name]}) seed {seed}, {count} pairs, {method}: ARI {row['ari']:.3f}, "
                    f"{row['clusters_used']} clusters used, {row['seconds']:.1f} s, {row['warnings']} warnings",
                    file=sys.stderr,
                    flush=True,
                )
    return results.write_summary(csv_path, output_dir / "summary.csv", summarise, renamed={})


def _planned(counts: list[int], auto_k: bool) -> list[tuple[int, str]]:
    """The (pair count, method) fits of one set and seed, in the order they run."""
    planned = [(0, method) for method in PAIR_FREE]
    for count in counts:
        planned.append((count, "dcgmm"))
        if count:
            planned.append((count, "pckmeans"))
    if auto_k and counts:
        planned.append((counts[-1], "dcgmm_auto"))
    return planned


# --- the summary -------------------------------------------------------------------------------------------------


def summarise(rows: pd.DataFrame) -> pd.DataFrame:
    """Per dataset, half, pair count and method: the seeds (``runs``), the mean and standard deviation of the ARI
    over them (a failed fit's NaN left out), and the mean seconds, clusters used, warnings and (``dcgmm_auto``)
    chosen K; sets in the order of :data:`SETS`."""
    keys = ["dataset", "half", "num_pairs", "method"]
    if rows.empty:
        return pd.DataFrame(columns=[*keys, "n_classes", "runs", "ari_mean", "ari_std"])
    rows = rows.assign(chosen_k=pd.to_numeric(rows.get("chosen_k", np.nan), errors="coerce"))
    for column in ("clusters_used", "seconds", "warnings"):
        rows[column] = pd.to_numeric(rows[column], errors="coerce")
    summary = (
        rows.groupby(keys, dropna=False)
        .agg(
            n_classes=("n_classes", "first"),
            runs=("ari", "count"),
            ari_mean=("ari", "mean"),
            ari_std=("ari", "std"),
            seconds_mean=("seconds", "mean"),
            clusters_used_mean=("clusters_used", "mean"),
            warnings_mean=("warnings", "mean"),
            chosen_k_mean=("chosen_k", "mean"),
        )
        .reset_index()
    )
    order = {name: i for i, name in enumerate(SETS)}
    rank = {method: i for i, method in enumerate(METHODS)}
    return summary.sort_values(
        ["dataset", "num_pairs", "method"],
        key=lambda c: c.map(order) if c.name == "dataset" else (c.map(rank) if c.name == "method" else c),
    ).reset_index(drop=True)


def _cell(summary: pd.DataFrame, dataset: str, num_pairs: int, method: str) -> pd.Series | None:
    """The summary's row of ``method`` on ``dataset`` with ``num_pairs`` pairs (a pair-free method's row, under 0
    pairs, at any count), or None."""
    num_pairs = 0 if method in PAIR_FREE else num_pairs
    found = summary[(summary.dataset == dataset) & (summary.num_pairs == num_pairs) & (summary.method == method)]
    return None if found.empty else found.iloc[0]


def _mean_std(cell: pd.Series | None) -> str:
    if cell is None or pd.isna(cell.ari_mean):
        return "–"
    return f"{cell.ari_mean:.3f}" + ("" if pd.isna(cell.ari_std) else f" ± {cell.ari_std:.3f}")


def markdown_table(summary: pd.DataFrame) -> str:
    """A Markdown table of the ARI (mean ± std over the seeds), per set and pair count: dcgmm, its deep model's
    clusters, its first start alone, kmeans, gmm and pckmeans (k-means and the GMM, which take no pairs, repeated
    on every count)."""
    lines = [
        "| set | half | pairs | dcgmm | deep model | one start | kmeans | gmm | pckmeans |",
        "|---|---|---:|---|---|---|---|---|---|",
    ]
    for name in dict.fromkeys(summary.dataset):
        here = summary[summary.dataset == name]
        for count in sorted(set(here[here.method.isin(["dcgmm", "pckmeans"])].num_pairs)):
            cells = [
                _cell(summary, name, count, "dcgmm"),
                _cell(summary, name, count, DEEP),
                _cell(summary, name, count, ONE_START),
                _cell(summary, name, count, "kmeans"),
                _cell(summary, name, count, "gmm"),
                _cell(summary, name, count, "pckmeans"),
            ]
            lines.append(f"| {name} | {here.half.iloc[0]} | {count} | " + " | ".join(map(_mean_std, cells)) + " |")
    return "\n".join(lines)


def half_means_table(summary: pd.DataFrame) -> str:
    """A Markdown table of the mean ARI over each half's sets, per pair count, of the methods of
    :func:`markdown_table`; each mean is over the sets with a ``dcgmm`` row at that count (k-means and the GMM, which
    take no pairs, at 0 pairs)."""
    methods = ("dcgmm", DEEP, ONE_START, "kmeans", "gmm", "pckmeans")
    lines = [
        "| half | pairs | sets | dcgmm | deep model | one start | kmeans | gmm | pckmeans |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for half in sorted(set(summary.half)):  # reporting, then tuning
        part = summary[summary.half == half]
        for count in sorted(set(part[part.method == "dcgmm"].num_pairs)):
            names = list(part[(part.method == "dcgmm") & (part.num_pairs == count)].dataset)
            means = []
            for method in methods:
                cells = [_cell(part, name, count, method) for name in names]
                values = [cell.ari_mean for cell in cells if cell is not None and not pd.isna(cell.ari_mean)]
                means.append(f"{np.mean(values):.3f}" if len(values) == len(names) else "–")
            lines.append(f"| {half} | {count} | {len(names)} | " + " | ".join(means) + " |")
    return "\n".join(lines)


def comparisons(summary: pd.DataFrame, half: str = "reporting") -> list[str]:
    """Lines on ``half``'s sets: without pairs, the share where dcgmm's mean ARI >= the best of k-means' and the
    GMM's - :data:`NEAR`, and the worst gap; with each pair count, the sets where dcgmm < pckmeans."""
    part = summary[summary.half == half]
    lines, gaps = [], {}
    for name in dict.fromkeys(part.dataset):
        ours, others = _cell(part, name, 0, "dcgmm"), [_cell(part, name, 0, m) for m in PAIR_FREE]
        if ours is not None and all(o is not None for o in others):
            gaps[name] = ours.ari_mean - max(o.ari_mean for o in others)
    if gaps:
        held = sum(gap >= -NEAR for gap in gaps.values())
        worst = min(gaps, key=gaps.get)
        lines.append(
            f"{half} half, no pairs: dcgmm >= max(kmeans, gmm) - {NEAR} on {held}/{len(gaps)} sets "
            f"({held / len(gaps):.0%}); worst gap {gaps[worst]:+.3f} ({worst})"
        )
    for count in sorted(set(part[part.method == "pckmeans"].num_pairs)):
        behind = []
        for name in dict.fromkeys(part.dataset):
            ours, theirs = _cell(part, name, count, "dcgmm"), _cell(part, name, count, "pckmeans")
            if ours is not None and theirs is not None and ours.ari_mean < theirs.ari_mean:
                behind.append(f"{name} ({ours.ari_mean:.3f} < {theirs.ari_mean:.3f})")
        lines.append(f"{half} half, {count} pairs: dcgmm < pckmeans on {', '.join(behind) or 'no set'}")
    return lines


def auto_k_lines(summary: pd.DataFrame) -> list[str]:
    """Per set fitted with ``n_clusters="auto"``: the mean chosen K against the true K, and the ARI and seconds
    against the fit at the true K with the same pairs."""
    lines = []
    for row in summary[summary.method == "dcgmm_auto"].itertuples(index=False):
        known = _cell(summary, row.dataset, row.num_pairs, "dcgmm")
        against = "" if known is None else f" (true K: ARI {known.ari_mean:.3f}, {known.seconds_mean:.1f} s)"
        lines.append(
            f"{row.dataset}, {row.num_pairs} pairs: K='auto' chose {row.chosen_k_mean:.1f} (true {row.n_classes}), "
            f"ARI {row.ari_mean:.3f}, {row.seconds_mean:.1f} s{against}"
        )
    return lines


def report(summary: pd.DataFrame) -> str:
    """The Markdown tables per set and per half, the comparisons of the reporting half (then of the tuning half) and
    the auto-K lines."""
    parts = [markdown_table(summary), "", half_means_table(summary), ""]
    parts += [*comparisons(summary, "reporting"), *comparisons(summary, "tuning")]
    auto = auto_k_lines(summary)
    return "\n".join([*parts, *([""] + auto if auto else [])])


# --- the command line --------------------------------------------------------------------------------------------


def define_sets_flag(choices: Sequence[str], default: Sequence[str], help_text: str) -> None:
    """``--datasets``: names among ``choices`` (any other refused), ``default`` when not given; for this runner and
    the studies of its sets."""
    flags.DEFINE_list("datasets", list(default), f"{help_text}: {', '.join(choices)}.")
    flags.register_validator(
        "datasets", lambda v: set(v) <= set(choices), f"--datasets must be among {', '.join(choices)}"
    )


def _define_flags() -> None:
    """The runner's flags, defined when it runs as a program (importing the module, as the tests do, defines none:
    ``--output_dir`` would clash with the other runners' in one process)."""
    flags.DEFINE_string("output_dir", "results/your_data_bench", "Folder of results.csv and summary.csv.")
    flags.DEFINE_list("seeds", ["0", "1", "2"], "Run seeds (of the pairs' draw and of every method).")
    flags.DEFINE_list("pairs", ["0", "100", "500"], "Counts of random pairs answered from the labels (0: none).")
    flags.DEFINE_bool("auto_k", False, "Also fit n_clusters='auto' at the largest pair count (method dcgmm_auto).")
    flags.DEFINE_bool("tiny", False, f"A quick run: sets {', '.join(TINY_SETS)}, the first seed, {TINY_PARAMS}.")
    define_sets_flag(SETS, [], "The sets to run (default: all, or the tiny ones)")
    flags.DEFINE_string(
        "params",
        "{}",
        "DCGMMClustering parameters in place of its defaults, as a JSON object (e.g. '{\"hidden_units\": [64, 64]}'); "
        "use another --output_dir: its rows would stand for the defaults'.",
    )
    flags.register_validator("params", _is_json_object, "--params must be a JSON object of parameter names")
    for name in ("seeds", "pairs"):
        flags.register_validator(
            name, lambda v: bool(v) and all(s.isdigit() for s in v), f"--{name} must be non-negative integers"
        )


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def main(argv: list[str]) -> None:
    del argv
    summary = run_bench(
        Path(FLAGS.output_dir),
        [int(s) for s in FLAGS.seeds],
        [int(p) for p in FLAGS.pairs],
        auto_k=FLAGS.auto_k,
        tiny=FLAGS.tiny,
        datasets=FLAGS.datasets or None,
        params=json.loads(FLAGS.params),
    )
    print(report(summary))


if __name__ == "__main__":
    _define_flags()
    app.run(main)
