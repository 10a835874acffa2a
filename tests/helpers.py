"""Reference computations, toy data and the runners' flags, shared by the tests."""

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

import keras
import numpy as np
from absl import flags

from dcgmm_tf import DCGMM, MLPDecoder, MLPEncoder
from dcgmm_tf.config import RunConfig, RuntimeConfig
from scripts.migrate_results import BASES

# The estimator's tiny schedule. No pretraining where a test is about something else: a tiny fit's time is the tracing
# of its steps, and the autoencoder's would add a third of it.
TINY = {
    "latent_dim": 2,
    "epochs": 2,
    "pretrain_epochs": 0,
    "batch_size": 32,
    "random_state": 0,
    "hidden_units": (32, 32),
    "choice_tuning_epochs": 0,  # "auto" tunes four folds for about 1,200 steps each
}


def dense_matrix(constraints) -> np.ndarray:
    """The full symmetric N x N matrix W of a (small) ConstraintSet, built the obvious way."""
    n = constraints.num_samples
    w = np.zeros((n, n), np.float32)
    w[constraints.i, constraints.j] = constraints.weight
    w[constraints.j, constraints.i] = constraints.weight
    return w


def toy_data(n=256, seed=0):
    """Vectors in [0, 1]^20 whose last 4 features reveal the binary label."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    x = np.empty((n, 20), np.float32)
    x[:, :16] = 0.5 + rng.normal(0, 0.15, (n, 16))
    x[:, 16:] = 0.05 + 0.9 * y[:, None] + rng.normal(0, 0.03, (n, 4))
    return np.clip(x, 0, 1), y


def toy_npz(directory, num_train, num_test=100):
    """``directory/toy.npz`` with :func:`toy_data` splits (test split drawn with seed 1); returns its path."""
    x, y = toy_data(num_train)
    x_test, y_test = toy_data(num_test, seed=1)
    path = directory / "toy.npz"
    np.savez(path, x_train=x, y_train=y, x_test=x_test, y_test=y_test)
    return str(path)


def toy_loop_configs(tmp_path):
    """A tiny run config on :func:`toy_npz` (400 samples, no pretraining or tuning) and a quiet runtime config writing
    under ``tmp_path``: the start of the active-learning loop's and the labelling page's tests."""
    config = RunConfig(
        dataset=toy_npz(tmp_path, 400),
        pretrain_epochs=0,
        pair_tuning_epochs=0,
        latent_dim=2,
        batch_size=32,
        restart_every=2,
    )
    runtime = RuntimeConfig(verbose=0, output_dir=str(tmp_path / "out"), cache_dir=str(tmp_path / "cache"))
    return config, runtime


def small_model(num_clusters=2, seed=0, hidden=(64, 32)):
    """A DC-GMM for the 20 features of :func:`toy_data` with a small MLP, its initial weights fixed by ``seed``."""
    keras.utils.set_random_seed(seed)
    return DCGMM(
        (20,),
        num_clusters=num_clusters,
        seed=seed,
        encoder=MLPEncoder(2, hidden_units=hidden, name="encoder"),
        decoder=MLPDecoder(20, hidden_units=hidden[::-1], name="decoder"),
    )


def weights_equal(a, b):
    """Whether two lists of weight arrays are equal, bit for bit."""
    return len(a) == len(b) and all(np.array_equal(u, v) for u, v in zip(a, b))


def replica_problem(n=96, dim=12):
    """``n`` samples of two classes in [0, 1]^``dim`` and 33 pairs of them: with batch 32 the pair batches hold 16,
    16 and 1 pair, so the last leaves one of two replicas (or workers) empty."""
    labels = np.random.default_rng(0).integers(0, 2, n)
    x = np.clip(0.15 + 0.7 * labels[:, None] + 0.1 * np.random.default_rng(0).random((n, dim)).astype(np.float32), 0, 1)
    from dcgmm_tf import ConstraintSet

    return x, ConstraintSet.from_labels(labels, 33, alpha=20.0, seed=0)


def noise_free_model(dim=12):
    """A small DC-GMM for ``dim`` features, compiled with SGD(0.05), whose loss does not depend on the
    reparameterisation noise (which differs between one device and replicas): the analytic KL and a log-variance
    of -30 (noise of std 3e-7). Its initial weights follow Keras' global seed."""
    model = DCGMM(
        (dim,),
        num_clusters=2,
        seed=0,
        kl_estimator="analytic",
        encoder=MLPEncoder(2, (16,), name="encoder"),
        decoder=MLPDecoder(dim, (16,), name="decoder"),
    )
    model.encoder.log_var_head.kernel.assign(np.zeros((16, 2), np.float32))
    model.encoder.log_var_head.bias.assign(np.full(2, -30.0, np.float32))
    model.compile(optimizer=keras.optimizers.SGD(0.05))
    return model


@contextlib.contextmanager
def parsed_flags(argv: list[str]) -> Iterator[flags.FlagValues]:
    """The global absl flags parsed from ``argv`` (its first item the program's name) for the ``with`` block, as a
    runner imported in this process sees them; unparsed again afterwards, whatever happens in the block."""
    flags.FLAGS.unparse_flags()
    try:
        flags.FLAGS(argv)
        yield flags.FLAGS
    finally:
        flags.FLAGS.unparse_flags()


@contextlib.contextmanager
def tensorflow_messages() -> Iterator[list[str]]:
    """The messages that reach TensorFlow's logger inside the block (after its filters), in order."""
    logger, seen = logging.getLogger("tensorflow"), []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    logger.addHandler(handler)
    try:
        yield seen
    finally:
        logger.removeHandler(handler)


def recorded_keyword(monkeypatch, owner: Any, name: str, keyword: str) -> list:
    """The ``keyword`` argument of every call of ``owner.name`` from now on, in order (the call runs as before)."""
    recorded = []
    call = getattr(owner, name)

    def recording(*args, **kwargs):
        recorded.append(kwargs[keyword])
        return call(*args, **kwargs)

    monkeypatch.setattr(owner, name, recording)
    return recorded


def recorded_em_starts(monkeypatch) -> list:
    """The ``n_init`` of every call of ``starts.fit_latent_classes`` from now on, in order."""
    from dcgmm_tf import starts

    return recorded_keyword(monkeypatch, starts, "fit_latent_classes", "n_init")


# The older recipe's flags (docs/findings.md), with which the reference rows and older results rows were made.
OLDER_RECIPE = BASES["older"]
