"""The training recipe from Python and through the runner, in this process, on toy data."""

import dataclasses
import logging

import numpy as np
import pandas as pd
import pytest

from dcgmm_tf import ConstraintSet, recipe
from dcgmm_tf.config import RunConfig, RuntimeConfig
from dcgmm_tf.data import load_dataset
from experiments import results, run
from tests.helpers import parsed_flags, toy_data, toy_npz

METRICS = ["acc", "nmi", "ari", "constraint_satisfaction", "start_acc"]


@pytest.fixture(name="toy")
def fixture_toy(tmp_path):
    """toy.npz (600 training, 100 test samples), a tiny config (no pretraining: the tests that need one ask for it)
    and a runtime config writing under tmp_path."""
    config = RunConfig(
        dataset=toy_npz(tmp_path, 600),
        epochs=2,
        pretrain_epochs=0,
        pair_tuning_epochs=0,
        num_constraints=100,
        latent_dim=2,
        batch_size=32,
        restart_every=2,
    )
    runtime = RuntimeConfig(
        deterministic=False,
        verbose=0,
        eval_every=1,
        output_dir=str(tmp_path / "out"),
        cache_dir=str(tmp_path / "cache"),
    )
    return config, runtime


def test_python_call_gives_the_row_of_the_runner(toy, tmp_path):
    config, runtime = toy
    summary = run.run(config, runtime)
    row = results.read_rows(tmp_path / "out" / "results.csv").iloc[0]  # a key of digits stays text
    data = load_dataset(config.dataset)
    python_row, trained, y_test, clusters = recipe.train_and_evaluate(
        config, data, dataclasses.replace(runtime, output_dir=str(tmp_path / "python"))
    )
    assert python_row["acc"] == recipe.metrics.cluster_accuracy(y_test, clusters)
    assert python_row["config"] == row["config"] == config.key()
    assert "chosen_k" not in python_row  # only a run that chose its K (num_clusters=0) has the column
    assert python_row["seed"] == row["seed"] == 0 and python_row["num_constraints"] == row["num_constraints"] == 100
    assert [python_row[m] for m in METRICS] == pytest.approx(row[METRICS].tolist(), abs=1e-6)
    assert summary.loc[0, "runs"] == 1 and summary.loc[0, "acc_mean"] == pytest.approx(row["acc"])
    assert {"loss", "reconstruction", "cluster_kl", "constraint", "test_acc"} <= set(trained.history)
    assert len(trained.history["loss"]) == 2


def test_runner_main_builds_its_configs_from_the_flags(toy, tmp_path):
    config, runtime = toy
    with parsed_flags(
        [
            "run",
            f"--dataset={config.dataset}",
            "--epochs=2",
            "--pretrain_epochs=0",
            "--pair_tuning_epochs=0",
            "--num_constraints=100",
            "--latent_dim=2",
            "--batch_size=32",
            "--restart_every=2",
            "--nodeterministic",
            "--verbose=0",
            "--eval_every=1",
            f"--output_dir={runtime.output_dir}",
            f"--cache_dir={runtime.cache_dir}",
        ]
    ) as values:
        assert run.configs(values) == (config, runtime)


@pytest.mark.slow
def test_default_start_uses_the_links_and_leaves_vade_as_the_paper(toy, caplog):
    config, runtime = toy
    data = load_dataset(config.dataset)
    caplog.set_level(logging.INFO)

    def logged(**changes):
        caplog.clear()
        row = recipe.train_and_evaluate(dataclasses.replace(config, **changes), data, runtime).row
        return row, caplog.text

    _, log = logged()
    assert "mixture initialised by latent_class" in log and "mixture restarted by latent_class after epoch 2" in log
    vade, log = logged(method="vade")  # no constraints: the paper's GMM, never restarted
    assert "mixture initialised" not in log and "restarted" not in log
    vade_paper, _ = logged(method="vade", cluster_init="gmm", restart_every=0)
    assert [vade[m] for m in ("start_acc", "acc", "nmi", "ari")] == pytest.approx(
        [vade_paper[m] for m in ("start_acc", "acc", "nmi", "ari")], abs=1e-6
    )


@pytest.mark.slow
def test_pretrain_seed_shares_one_pretrained_model_across_runs(toy, tmp_path):
    config, runtime = toy
    flags = [
        f"--dataset={config.dataset}",
        *("--epochs=1", "--pretrain_epochs=1", "--num_constraints=100", "--latent_dim=2", "--batch_size=32"),
        *("--cluster_init=gmm", "--restart_every=0", "--verbose=0", "--eval_every=1"),
        f"--output_dir={runtime.output_dir}",
        f"--cache_dir={runtime.cache_dir}",
    ]
    with parsed_flags(["run", *flags, "--seed=5", "--pretrain_seed=3", "--runs=2"]):
        run.main(["run"])  # --runs through the runner's flags, as the command line gives them
    caches = list((tmp_path / "cache").glob("*.weights.h5"))
    assert len(caches) == 1 and "-seed3-" in caches[0].name
    rows = pd.read_csv(tmp_path / "out" / "results.csv")
    assert list(rows["seed"]) == [5, 6]
    assert rows["start_acc"].nunique() == 1  # both runs start from the same pretrained GMM
    # without --pretrain_seed each run pretrains under its own seed (the command-line test makes one such run)
    assert [recipe.pretraining_seed(dataclasses.replace(config, seed=s)) for s in (5, 6)] == [5, 6]
    summary = pd.read_csv(tmp_path / "out" / "summary.csv")
    assert summary.loc[0, "runs"] == 2 and summary.loc[0, "acc_mean"] == pytest.approx(rows["acc"].mean())


def test_finished_runs_are_skipped(toy, tmp_path, monkeypatch):
    config, runtime = toy
    calls = []

    def fake_train_and_evaluate(config, data, runtime, callbacks=None):
        calls.append(config.seed)
        row = {
            "dataset": data.name,
            "method": config.method,
            "seed": config.seed,
            "epochs": config.epochs,
            "num_constraints": 10,
            "acc": 0.5,
            "nmi": 0.5,
            "ari": 0.5,
            "config": config.key(),
        }
        return recipe.RunResult(row, recipe.TrainedModel(None, {}, np.nan), np.array([0, 1]), np.array([1, 0]))

    monkeypatch.setattr(recipe, "train_and_evaluate", fake_train_and_evaluate)
    data = load_dataset(config.dataset)
    results.append_row(tmp_path / "out" / "results.csv", fake_train_and_evaluate(config, data, runtime).row)
    calls.clear()
    run.run(config, runtime, runs=2)
    assert calls == [1]  # seed 0 was done already
    run.run(config, runtime, runs=2)
    assert calls == [1]
    run.run(dataclasses.replace(config, batch_size=64), runtime, runs=2)  # another configuration: run again
    assert calls == [1, 0, 1]
    assert len(pd.read_csv(tmp_path / "out" / "results.csv")) == 4


@pytest.mark.slow
def test_train_from_python_without_a_run_folder(toy, tmp_path):
    config, runtime = toy
    data = load_dataset(config.dataset)
    constraints = recipe.make_constraints(config, data.y_train)
    trained = recipe.train(config, data, constraints, runtime=runtime)
    clusters = trained.model.predict(data.x_test, verbose=0).argmax(-1)
    assert clusters.shape == (100,) and 0 <= trained.start_acc <= 1
    assert not (tmp_path / "out").exists()  # no run folder: nothing but the pretraining cache is written
    assert len(list((tmp_path / "cache").glob("*.weights.h5"))) == 1
    with pytest.raises(ValueError, match="the constraints index 10 samples but x_train holds 600"):
        recipe.train(config, data, ConstraintSet.empty(10), runtime=runtime)


def test_baselines_train_behind_the_same_interface(toy, tmp_path):
    config, runtime = toy
    data = load_dataset(config.dataset)
    pck = dataclasses.replace(config, method="pckmeans", epochs=5, restart_every=10)
    trained = recipe.train(
        pck, data, recipe.make_constraints(pck, data.y_train), run_dir=tmp_path / "pck", runtime=runtime
    )
    assert np.isnan(trained.start_acc) and "changed" in trained.history
    assert len(pd.read_csv(tmp_path / "pck" / "history.csv")) == len(trained.history["changed"])
    assert set(recipe.predict_clusters(trained.model, data.x_test)) <= {0, 1}
    assert set(recipe.TRAINERS) == {"dcgmm", "vade", "pckmeans", "sdec", "cidec"}


def test_steps_per_execution_leaves_the_training_unchanged():
    """Several steps per compiled call train exactly as one step per call, also when an epoch (26 batches here) ends
    inside a call (7), and when every epoch is one call and all epochs read one iterator (32, the default on long
    fits): the mixture's restarts after each epoch see the same weights."""
    import keras

    from dcgmm_tf.callbacks import ClusterRestart
    from dcgmm_tf.fitting import FitSchedule, fit_mixture
    from tests.helpers import small_model, weights_equal

    x, y = toy_data(600)
    constraints = ConstraintSet.from_labels(y, 100, seed=0)
    trained = []
    for steps in (1, 7, 32):
        model = small_model()
        keras.utils.set_random_seed(0)
        epoch_ends = []
        ends = keras.callbacks.LambdaCallback(
            on_epoch_end=lambda epoch, logs, model=model, ends=epoch_ends: ends.append(int(model.optimizer.iterations))
        )
        restart = ClusterRestart(x, constraints, 1, num_components=4, em_starts=1)
        history = fit_mixture(
            model, x, constraints, FitSchedule(3, batch_size=32), [restart, ends], verbose=0, steps_per_execution=steps
        )
        trained.append((model.get_weights(), history["loss"], int(model.optimizer.iterations)))
        assert epoch_ends == [26, 52, 78]
        assert model.steps_per_execution == min(steps, 26)
    for weights, losses, iterations in trained[1:]:
        assert weights_equal(weights, trained[0][0]) and iterations == trained[0][2]
        # The epoch's mean loss is a float32 sum whose order the thread pool may change (seen once under load).
        np.testing.assert_allclose(losses, trained[0][1], rtol=1e-6)


def test_a_reused_step_trains_as_a_new_compile():
    """``reuse_step`` keeps the step compiled for the model's last fit of the same data, steps and optimizer, and
    the model then trains as it would after a new compile (an optimizer with no step taken); another schedule
    compiles anew."""
    from dcgmm_tf.data.pipeline import steps_per_epoch
    from dcgmm_tf.fitting import FitSchedule, fit_mixture
    from tests.helpers import small_model, weights_equal

    x, y = toy_data(300)
    constraints = ConstraintSet.from_labels(y, 60, seed=0)
    schedule = FitSchedule(2, batch_size=32, seed=3, lr_schedule="staircase", lr_decay_epochs=1)
    reused, fresh = small_model(), small_model()
    begin = reused.get_weights()
    fit_mixture(reused, x, constraints, schedule, verbose=0)
    step = reused.train_function
    reused.set_weights(begin)
    reused.reseed(0)
    history = fit_mixture(reused, x, constraints, schedule, verbose=0, reuse_step=True)
    assert reused.train_function is step  # not traced again
    fresh.set_weights(begin)
    reference = fit_mixture(fresh, x, constraints, schedule, verbose=0)
    assert weights_equal(reused.get_weights(), fresh.get_weights())
    assert weights_equal(
        [v.numpy() for v in reused.optimizer.variables], [v.numpy() for v in fresh.optimizer.variables]
    )
    np.testing.assert_allclose(history["loss"], reference["loss"], rtol=1e-6)
    fit_mixture(reused, x, constraints, FitSchedule(1, batch_size=32, learning_rate=1e-4), verbose=0, reuse_step=True)
    assert reused.train_function is not step  # another learning rate: compiled anew
    assert reused.optimizer.iterations == steps_per_epoch(len(x), constraints, 32)  # with a new optimizer


def test_a_fit_stops_once_its_clusters_hold_still(caplog):
    """With ``tol`` a fit stops after the first ``patience`` epochs in a row in which at most that share of the
    samples changed cluster: its network is that of the fit without the stop at that epoch, and the restart of the
    last epoch follows that epoch. A stop that never comes leaves the fit as it is without one, to the bit."""
    import keras

    from dcgmm_tf.fitting import FitSchedule
    from tests.helpers import small_model, weights_equal

    x, y = toy_data(300)
    pairs = ConstraintSet.from_labels(y, 60, seed=0)
    schedule = FitSchedule(8, batch_size=32, seed=3)

    def fit(**stop):
        model = small_model(num_clusters=3)
        recipe.start_mixture(model, x, "latent_class", pairs, seed=0)
        ends = []  # each epoch's clusters and encoder weights
        record = keras.callbacks.LambdaCallback(
            on_epoch_end=lambda epoch, logs: ends.append(
                (model.cluster_probabilities(x).argmax(-1), model.encoder.get_weights())
            )
        )
        # No restart before the last epoch: the recorded clusters are those the stop compares.
        kwargs = dict(start="latent_class", restart_every=100, seed=0, components=6, em_starts=1, verbose=0)
        history = recipe.fit(model, x, pairs, schedule, callbacks=[record], **kwargs, **stop)
        return history, ends, model

    full, ends, model = fit()
    changed = [float(np.mean(a != b)) for (a, _), (b, _) in zip(ends, ends[1:])]
    tol, patience = sorted(changed)[3], 2  # a share that some epochs meet
    still, stop = 0, None
    for epoch, share in enumerate(changed, start=2):
        still = still + 1 if share <= tol else 0
        if still == patience:
            stop = epoch
            break
    assert stop is not None and stop < schedule.epochs
    with caplog.at_level(logging.INFO):
        stopped, _, stopped_model = fit(tol=tol, patience=patience)
    assert len(stopped["loss"]) == stop and weights_equal(stopped_model.encoder.get_weights(), ends[stop - 1][1])
    assert f"after epoch {stop} in" in caplog.text and f"stopped after epoch {stop}" in caplog.text
    never, _, never_model = fit(tol=0.0, patience=100)
    assert len(never["loss"]) == schedule.epochs and weights_equal(never_model.get_weights(), model.get_weights())


def test_pretraining_steps_per_execution_leaves_the_weights_unchanged():
    """32 steps per call (the default on long fits) give the weights of one step per call (600 samples in
    batches of 32: 19 steps per epoch, so a call ends inside an epoch)."""
    from dcgmm_tf.pretraining import pretrain_autoencoder
    from tests.helpers import small_model, weights_equal

    x, _ = toy_data(600)
    pretrained = []
    for steps in (1, 32):
        model = small_model()
        initial = model.get_weights()
        pretrain_autoencoder(model, x, epochs=2, batch_size=32, seed=0, verbose=0, steps_per_execution=steps)
        pretrained.append(model.get_weights())
    assert not weights_equal(pretrained[0], initial)
    assert weights_equal(pretrained[1], pretrained[0])


def test_short_fits_run_one_step_per_call_unless_asked():
    """Without a request, a fit of fewer than 256 steps compiles one step per call (its multi-step loop would cost
    more to trace than it saves), a longer one 32, or its epoch's steps when fewer; a requested value is kept."""
    import keras

    from dcgmm_tf.fitting import FitSchedule, fit_mixture, steps_per_call
    from tests.helpers import small_model

    assert (steps_per_call(255), steps_per_call(256), steps_per_call(10, 7), steps_per_call(10**6, 1)) == (1, 32, 7, 1)
    with pytest.raises(ValueError, match="steps_per_execution"):
        steps_per_call(10, 0)
    x, y = toy_data(600)
    constraints = ConstraintSet.from_labels(y, 100, seed=0)
    for epochs, expected in ((2, 1), (10, 26)):  # 26 steps per epoch: 52 and 260 steps, each epoch one call of 26
        model = small_model()
        keras.utils.set_random_seed(0)
        fit_mixture(model, x, constraints, FitSchedule(epochs, batch_size=32), verbose=0)
        assert model.steps_per_execution == expected


@pytest.mark.slow
def test_num_clusters_zero_chooses_k_from_the_pairs(toy, monkeypatch, caplog):
    from dcgmm_tf import cluster_count

    config, runtime = toy
    caplog.set_level(logging.INFO)
    data = load_dataset(config.dataset)
    asked = []

    def choose(z, answers, candidates, **kwargs):  # the runner's call, with fewer candidates than 2..30: quicker
        asked.append((candidates, len(answers)))
        return cluster_count.choose_num_clusters(z, answers, range(2, 6), **kwargs)

    monkeypatch.setattr(recipe, "choose_num_clusters", choose)
    probed = []
    probe = cluster_count.probe_num_clusters
    monkeypatch.setattr(recipe, "probe_num_clusters", lambda *a, **k: probed.append(probe(*a, **k)) or probed[-1])
    pretrained = []
    pretrain = recipe.pretrained_model

    def counted(*args, **kwargs):
        pretrained.append(pretrain(*args, **kwargs))
        return pretrained[-1]

    monkeypatch.setattr(recipe, "pretrained_model", counted)
    result = recipe.train_and_evaluate(dataclasses.replace(config, num_clusters=0, probe_epochs=1), data, runtime)
    assert len(pretrained) == 1  # K is chosen on the pretrained embedding; the run at K takes its autoencoder
    # the runner asks for the default range, and chooses from the 100 answers, not from their spread copies
    assert asked == [(cluster_count.DEFAULT_CANDIDATES, 100)] and result.row["training_pairs"] > 100
    assert 2 <= result.row["chosen_k"] <= 5 and result.row["config"] != config.key()
    # then the probes: the embedding's K and its neighbours trained on 3/4 of the answers, scored on the rest
    assert len(probed) == 1 and probed[0].criterion == "probes" and result.row["chosen_k"] in probed[0].probed
    assert len(probed[0].probed) >= 2 and "K chosen by the probes" in caplog.text
    with pytest.raises(ValueError, match="num_clusters=0 .chosen from the pairs. applies to dcgmm or vade only"):
        RunConfig(method="pckmeans", num_clusters=0)


def test_a_run_checks_its_training_data_once(toy, monkeypatch):
    """prepare_run checks x_train; the pretraining, the start and the fit take it as checked."""
    from dcgmm_tf import validation

    config, runtime = toy
    data = load_dataset(config.dataset)
    checked = []
    check_data = validation.check_data

    def counting(x, *args, **kwargs):
        checked.append(len(x))
        return check_data(x, *args, **kwargs)

    monkeypatch.setattr(validation, "check_data", counting)
    recipe.train(config, data, recipe.make_constraints(config, data.y_train), runtime=runtime)
    assert checked.count(len(data.x_train)) == 1


def test_pair_tuning_runs_before_the_start_and_not_for_vade(toy, caplog):
    config, runtime = toy
    data = load_dataset(config.dataset)
    caplog.set_level(logging.INFO)
    tuned = dataclasses.replace(config, pretrain_epochs=1, pair_tuning_epochs=1)
    for method, expected in (("dcgmm", True), ("vade", False)):  # VaDE has no pairs to tune with
        caplog.clear()
        chosen = dataclasses.replace(tuned, method=method)
        recipe.started_model(chosen, recipe.prepare_run(chosen, data), runtime)
        log = caplog.text
        assert ("pair tuning epoch 1/1" in log) == expected
        assert not expected or log.index("pair tuning epoch") < log.index("mixture initialised")
    assert tuned.key() != dataclasses.replace(tuned, pair_tuning_epochs=0).key()


def test_the_config_chooses_adam_for_the_pretraining_and_the_tuning(toy, monkeypatch, tmp_path):
    """fused_adam (on by default) reaches the pretraining and the tuning, and names the pretraining's cache."""
    from dcgmm_tf import optimizers, pair_tuning, pretraining

    config, runtime = toy
    data = load_dataset(config.dataset)
    made = []

    def spy(learning_rate, fused):
        made.append(fused)
        return optimizers.adam(learning_rate, fused)

    monkeypatch.setattr(pretraining, "adam", spy)
    monkeypatch.setattr(pair_tuning, "adam", spy)
    runtime = dataclasses.replace(runtime, cache=True, cache_dir=str(tmp_path / "cache"))
    tuned = dataclasses.replace(config, pretrain_epochs=1, pair_tuning_epochs=1)
    assert tuned.fused_adam
    for fused in (True, False):
        recipe.started_model(dataclasses.replace(tuned, fused_adam=fused), recipe.prepare_run(tuned, data), runtime)
    assert made == [True, True, False, False]
    assert len(list((tmp_path / "cache").glob("*.weights.h5"))) == 2  # one cache per optimizer


def test_fit_loss_adds_the_pairs_term_over_all_pairs():
    from dcgmm_tf import DCGMM, MLPDecoder, MLPEncoder

    x, y = toy_data(50)
    model = DCGMM(
        (20,),
        num_clusters=2,
        latent_dim=2,
        encoder=MLPEncoder(2, (8,)),
        decoder=MLPDecoder(20, (8,), "bernoulli"),
        seed=0,
    )
    model(x[:2])
    pairs = ConstraintSet([0, 1, 2], [3, 4, 5], [1e4, -1e4, 5e3], 50)
    model.reseed(3)
    without = recipe.fit_loss(model, x, ConstraintSet.empty(50))
    model.reseed(3)
    with_pairs = recipe.fit_loss(model, x, pairs)
    p = model.cluster_probabilities(x)
    expected = -2.0 / 50 * sum(w * p[i] @ p[j] for i, j, w in zip(pairs.i, pairs.j, pairs.weight))
    assert np.isfinite(without)
    assert with_pairs - without == pytest.approx(expected, rel=1e-4)
