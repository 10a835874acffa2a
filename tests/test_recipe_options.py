"""The recipe's options (configuration keys, EM starts, the pairwise term) on tiny runs."""

import dataclasses

import numpy as np
import pandas as pd

from dcgmm_tf.config import RunConfig, RuntimeConfig
from tests.helpers import toy_npz


def _tiny_run(tmp_path, out, **changes):
    """A tiny run's configs, with ``changes`` to the run's (in this process: the command line's flags are
    tests/test_config.py's)."""
    config = RunConfig(
        dataset=toy_npz(tmp_path, 240),
        num_clusters=2,
        epochs=3,
        pretrain_epochs=0,
        pair_tuning_epochs=0,
        num_constraints=60,
        batch_size=64,
        restart_every=2,
        spread_neighbours=0,  # the drawn pairs alone: with the spread ones the toy's pair gradients vanish in epoch 1
    )
    runtime = RuntimeConfig(verbose=0, eval_every=1, output_dir=str(tmp_path / out), cache_dir=str(tmp_path / "cache"))
    return dataclasses.replace(config, **changes), runtime


def test_the_runner_gives_its_em_starts_to_the_start_and_every_restart(tmp_path, monkeypatch):
    from experiments import run
    from tests.helpers import recorded_em_starts

    starts = recorded_em_starts(monkeypatch)
    run.run(*_tiny_run(tmp_path, "em", init_em_starts=2))
    assert starts == [2, 2, 2]  # the start, the restart after epoch 2 and the one after the last


def test_pair_likelihood_option_trains(tmp_path):
    from experiments import results, run

    config, runtime = _tiny_run(
        tmp_path,
        "lik",
        restart_every=0,
        cluster_init="gmm",
        pair_loss="likelihood",
        lr_schedule="cosine",
        spread_neighbours=1,  # the variant as measured: with the answers spread to neighbours
    )
    run.run(config, runtime)
    row = results.read_rows(tmp_path / "lik" / "results.csv").iloc[0]  # a key of 12 digits stays text
    assert row["config"] == config.key() != RunConfig().key()
    assert row["num_constraints"] == 60 < row["training_pairs"] <= 3 * 60  # the answers, and what they were spread to
    history = pd.read_csv(tmp_path / "lik" / "runs" / "dcgmm-toy-seed0" / "history.csv")
    assert np.isfinite(history["loss"]).all() and (history["constraint"] > 0).all()  # -log P > 0, the paper's -W s < 0


def test_pair_loss_leaves_vade_alone():
    """Without pairs (w=None) both pair terms are absent: VaDE's loss is the same under either option."""
    from tests.helpers import small_model, toy_data

    x, _ = toy_data(32)
    terms = []
    for pair_loss in ("paper", "likelihood"):
        model = small_model()
        model.pair_loss = pair_loss
        model.reseed(0)
        terms.append({k: float(v) for k, v in model.compute_loss_terms(x, None).items()})
    assert terms[0] == terms[1] and terms[0]["constraint"] == 0.0
