"""Reuters-10k: the RCV1 subset of DEC, VaDE and DC-GMM (10,000 documents, tf-idf of 2,000 words, 4 classes).

Local files are searched first (`reutersidf10k.npy`, or the DC-GMM pair `reutersidf10k_train.npy` and
`reutersidf10k_test.npy`); each is a pickled dict with `'data'` (documents x 2000 float tf-idf) and
`'label'` (0..3 for CCAT, GCAT, MCAT, ECAT). When none is found and `download` is True, the subset is
built from RCV1 with `sklearn.datasets.fetch_rcv1` and saved as `reutersidf10k.npy` for next time.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy import sparse

from dcgmm_tf.data import paths
from dcgmm_tf.data.dataset import DataSplits
from dcgmm_tf.data.splits import random_split
from dcgmm_tf.storage import write_atomically

CATEGORIES = ("CCAT", "GCAT", "MCAT", "ECAT")  # corporate, government/social, markets, economics
SUBFOLDER = "reuters"  # of each searched folder (see `paths.search_dirs`)
SINGLE_FILE = "reutersidf10k.npy"
SPLIT_FILES = ("reutersidf10k_train.npy", "reutersidf10k_test.npy")
NUM_WORDS = 2000
NUM_DOCUMENTS = 10_000
TEST_FRACTION = 0.2


def read_idf_file(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Read one `reutersidf10k*.npy` dict file; returns float32 features and int64 labels in 0..3.

    Unpickling is allowed only because the file must hold this dict; the content is validated.
    """
    try:
        obj = np.load(path, allow_pickle=True)
    except (OSError, ValueError, EOFError, pickle.UnpicklingError) as e:
        raise ValueError(f"{path}: not a readable .npy file, truncated or corrupt ({e}).") from e
    if isinstance(obj, np.ndarray) and obj.dtype == object and obj.shape == ():
        obj = obj.item()
    if not isinstance(obj, dict) or not {"data", "label"} <= set(obj):
        raise ValueError(
            f"{path}: expected a pickled dict with keys 'data' and 'label', got {type(obj).__name__}"
            + (f" with keys {sorted(obj)}" if isinstance(obj, dict) else "")
        )
    x, y = obj["data"], obj["label"]
    if sparse.issparse(x):
        x = x.toarray()
    x, y = np.asarray(x), np.asarray(y).reshape(-1)
    if x.ndim != 2 or x.dtype.kind not in "fiu" or len(x) != len(y) or len(x) == 0:
        raise ValueError(
            f"{path}: 'data' must be a non-empty 2-D numeric array with one row per label; got "
            f"{x.dtype} {x.shape} and {len(y)} labels"
        )
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{path}: 'data' contains NaN or infinite values")
    if y.dtype.kind not in "iu" or y.min() < 0 or y.max() >= len(CATEGORIES):
        raise ValueError(
            f"{path}: 'label' must hold integers in 0..{len(CATEGORIES) - 1}, got {y.dtype} in [{y.min()}, {y.max()}]"
        )
    return x.astype(np.float32), y.astype(np.int64)


def build_from_rcv1(
    features: sparse.spmatrix,
    topics: sparse.spmatrix,
    topic_names: Sequence[str] | np.ndarray,
    num_documents: int = NUM_DOCUMENTS,
    num_words: int = NUM_WORDS,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """The Reuters-10k construction applied to RCV1 as `sklearn.datasets.fetch_rcv1` returns it.

    Keeps the documents with exactly one of the 4 root categories, the `num_words` terms present in most
    of them, and a random subset of `num_documents`; rows are L2-normalised again over the kept terms.
    (DEC computed tf-idf itself from the raw tokens; scikit-learn ships RCV1's log tf-idf over 47,236
    terms, so the selection is made on those.) Returns float32 features and int64 labels.
    """
    names = [str(n) for n in topic_names]
    columns = [names.index(c) for c in CATEGORIES]
    roots = sparse.csr_matrix(topics)[:, columns].toarray().astype(bool)
    single = np.flatnonzero(roots.sum(1) == 1)
    features = sparse.csr_matrix(features)[single]
    labels = roots[single].argmax(1)
    document_frequency = np.asarray((features != 0).sum(0)).ravel()
    words = np.sort(np.argsort(-document_frequency, kind="stable")[:num_words])
    rng = np.random.default_rng(seed)
    keep = np.sort(rng.choice(len(single), min(num_documents, len(single)), replace=False))
    x = features[keep][:, words].toarray().astype(np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms > 0, norms, 1), labels[keep].astype(np.int64)


def _fetch_and_save(target: Path, seed: int) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import fetch_rcv1  # pylint: disable=g-import-not-at-top

    rcv1 = fetch_rcv1(data_home=str(target.parent / "scikit_learn_data"))
    x, y = build_from_rcv1(rcv1.data, rcv1.target, rcv1.target_names, seed=seed)

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:  # a file object: np.save would append ".npy" to a name
            np.save(f, {"data": x, "label": y}, allow_pickle=True)

    write_atomically(target, write)
    return x, y


def load_reuters(data_dir: str | os.PathLike | None = None, *, download: bool = True, seed: int = 0) -> DataSplits:
    """Reuters-10k as a `DataSplits` with a Gaussian likelihood.

    The DC-GMM train/test files are used as they are; the single DEC/VaDE file gets a seeded 80/20 split.

    Raises:
      FileNotFoundError: If no file is found and building it from RCV1 is impossible (offline).
      ValueError: If a file does not hold the expected dict.
    """
    dirs = paths.search_dirs(SUBFOLDER, data_dir)
    for directory in dirs:
        train, test = (directory / f for f in SPLIT_FILES)
        if train.is_file() and test.is_file():
            return _dataset(*read_idf_file(train), *read_idf_file(test))
        if (directory / SINGLE_FILE).is_file():
            return _dataset(*random_split(*read_idf_file(directory / SINGLE_FILE), TEST_FRACTION, seed))
    note = "download=False"
    if download:
        target = dirs[0] / SINGLE_FILE
        try:
            return _dataset(*random_split(*_fetch_and_save(target, seed), TEST_FRACTION, seed))
        except Exception as e:  # pylint: disable=broad-except
            note = f"building it from RCV1 with sklearn.datasets.fetch_rcv1 failed: {e!r}"
    searched = "\n".join(f"  {d}" for d in dirs)
    raise FileNotFoundError(
        f"Reuters-10k not found ({note}). Looked for {SINGLE_FILE} or {' + '.join(SPLIT_FILES)} in:\n{searched}\n"
        "Get reutersidf10k.npy from the DEC or VaDE repositories (or the two split files from DC-GMM's) and put "
        f"it in {paths.REPO_DATA_DIR / SUBFOLDER}, in $DCGMM_DATA or in --data_dir; or run once with internet "
        "access to build it from RCV1. See data/README.md."
    )


def _dataset(x_train, y_train, x_test, y_test) -> DataSplits:
    return DataSplits(x_train, y_train, x_test, y_test, name="reuters", likelihood="gaussian", class_names=CATEGORIES)
