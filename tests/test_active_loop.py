"""Active pair selection: the simulated loop and the runner, on toy data."""

import dataclasses

import numpy as np
import pandas as pd
import pytest

from dcgmm_tf import ConstraintSet, active_loop, recipe
from dcgmm_tf.active_loop import ActiveSchedule, simulate
from dcgmm_tf.data import load_dataset
from experiments import active as active_runner
from tests.helpers import toy_loop_configs


@pytest.fixture(name="toy")
def fixture_toy(tmp_path):
    return toy_loop_configs(tmp_path)


@pytest.mark.slow
def test_loop_adds_the_pairs_of_each_round_from_one_start(toy):
    config, runtime = toy
    # One round here; the next test makes two (each round trains on from the one before).
    schedule = ActiveSchedule(start_pairs=20, budgets=(40,), start_epochs=1, round_epochs=1)
    reported = []
    rows = simulate(config, load_dataset(config.dataset), ["random", "uncertain"], schedule, runtime, reported.append)
    frame = pd.DataFrame(rows)
    assert len(reported) == 2 and [len(curve) for curve in reported] == [2, 2]
    assert frame["num_pairs"].tolist() == [20, 40] * 2 and frame["epochs"].tolist() == [1, 2] * 2
    start = frame[frame["num_pairs"] == 20]
    assert start[["acc", "nmi", "ari"]].nunique().max() == 1  # both curves start from the same model
    assert frame[["acc", "nmi", "ari"]].apply(lambda c: c.between(-1, 1)).all().all()
    longer = dataclasses.replace(schedule, final_epochs=1)
    again = simulate(config, load_dataset(config.dataset), ["uncertain"], longer, runtime)  # start from the cache
    timeless = lambda curve: [{k: v for k, v in row.items() if k != "seconds"} for row in curve]  # noqa: E731
    assert timeless(again[:2]) == timeless(row for row in rows if row["strategy"] == "uncertain")
    assert again[2]["num_pairs"] == 40 and again[2]["epochs"] == 3  # trained on without new pairs
    with pytest.raises(ValueError, match="method dcgmm"):
        simulate(dataclasses.replace(config, method="vade"), load_dataset(config.dataset), ["random"], schedule)


@pytest.mark.slow
def test_loop_counts_answered_pairs_and_trains_each_round_on_their_spread(toy, monkeypatch):
    config, runtime = toy
    config = dataclasses.replace(config, spread_neighbours=1)
    trained_with = []
    fit = active_loop.fit_config

    def recording_fit(model, config, x, constraints, *args, **kwargs):
        trained_with.append(len(constraints))
        return fit(model, config, x, constraints, *args, **kwargs)

    monkeypatch.setattr(active_loop, "fit_config", recording_fit)
    schedule = ActiveSchedule(start_pairs=20, budgets=(40, 70), start_epochs=1, round_epochs=1)
    rows = simulate(config, load_dataset(config.dataset), ["random"], schedule, runtime)
    assert [row["num_pairs"] for row in rows] == [20, 40, 70]  # the budgets count the answers, not their spread
    assert [row["epochs"] for row in rows] == [1, 2, 3]  # each round trains on from the one before
    assert len(trained_with) == 3
    assert all(answered < spread <= 3 * answered for answered, spread in zip([20, 40, 70], trained_with))


@pytest.mark.slow
def test_runner_writes_curves_once_and_suggests_pairs_to_answer(toy, tmp_path):
    config, runtime = toy
    schedule = ActiveSchedule(start_pairs=20, budgets=(40,), start_epochs=1, round_epochs=1)
    rows = active_runner.curves(config, runtime, schedule, ["random", "explore"], runs=1)
    curves_csv = tmp_path / "out" / "curves.csv"
    assert (tmp_path / "out" / "curves.png").stat().st_size > 0
    written = pd.read_csv(curves_csv)
    assert list(written.columns[:6]) == list(active_runner.CURVE_COLUMNS) and len(written) == 4
    assert rows["seed"].unique().tolist() == [0] and sorted(rows["strategy"].unique()) == ["explore", "random"]
    y = load_dataset(config.dataset).y_train
    settings = {"config": config.key(), "schedule": active_runner.schedule_key(schedule)}
    start = ConstraintSet.from_labels(y, 20, seed=0)
    for strategy in ("random", "explore"):  # each curve's answers at its end, the start's pairs among them
        answers = ConstraintSet.from_csv(active_runner.answers_path(tmp_path / "out", strategy, 0, settings), len(y))
        assert len(answers) == 40 and set(zip(start.i, start.j)) <= set(zip(answers.i, answers.j))
        assert np.array_equal(np.sign(answers.weight), np.where(y[answers.i] == y[answers.j], 1, -1))
        must_links = written.loc[(written["strategy"] == strategy) & (written["num_pairs"] == 40), "must_links"]
        assert must_links.tolist() == [int(answers.must_link_mask.sum())]
    active_runner.curves(config, runtime, schedule, ["random", "explore"], runs=1)  # all done: nothing is rerun
    assert len(pd.read_csv(curves_csv)) == 4

    config = dataclasses.replace(config, epochs=1, num_constraints=30)
    output = tmp_path / "ask.csv"
    assert active_runner.suggest(config, runtime, "uncertain", 25, str(output)) == 25
    asked = pd.read_csv(output)
    assert list(asked.columns) == ["i", "j", "weight"] and asked["weight"].isna().all() and len(asked) == 25
    with pytest.raises(ValueError, match="missing value for 'weight'"):  # unanswered pairs are refused
        ConstraintSet.from_csv(output, 400)
    asked["weight"] = np.where(y[asked["i"]] == y[asked["j"]], 1, -1)
    asked.to_csv(output, index=False)
    read = recipe.make_constraints(dataclasses.replace(config, constraints_file=str(output), alpha=9000.0), y)
    assert len(read) == 25 and np.all(np.abs(read.weight) == 9000.0)
    assert np.array_equal(np.sign(read.weight), np.where(y[read.i] == y[read.j], 1, -1))
