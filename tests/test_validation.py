"""Bad input gets a clear error: data checks, corrupt files, and the runner's flags and error reporting.

Constraint checks (indices, i == j, duplicates, conflicting pairs, CSV fields, empty files, too many pairs
requested) and IDX checks are tested in test_constraints.py and test_datasets.py; here they are tested
through the command line.
"""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from absl import flags

from dcgmm_tf import DCGMM, MLPDecoder, MLPEncoder, pretrain
from dcgmm_tf.data import constrained_dataset, load_dataset
from dcgmm_tf.pretraining import labelled_subset
from dcgmm_tf.validation import check_data, check_matrix, exit_on_user_error
from tests.helpers import parsed_flags

REPO = Path(__file__).resolve().parents[1]
FLAGS = flags.FLAGS


def good_data(n=30, d=4):
    rng = np.random.default_rng(0)
    return rng.random((n, d)).astype(np.float32), rng.integers(0, 3, n)


# ------------------------------------------------------------ check_data ---


def test_check_data_accepts_good_data():
    x, y = good_data()
    out = check_data(x.astype(np.float64), y, num_clusters=3, likelihood="bernoulli", sample_shape=(4,))
    assert out.dtype == np.float32 and out.shape == (30, 4)
    images = np.zeros((5, 8, 8, 1), np.uint8)
    assert check_data(images, sample_shape=(8, 8, 1)).shape == (5, 8, 8, 1)
    assert check_data(x * 10 - 5, likelihood="gaussian").min() < 0


def _with(x, index, value):
    x = x.copy()
    x[index] = value
    return x


@pytest.mark.parametrize(
    "case, kwargs, match",
    [
        ("nan", {}, r"1 NaN or infinite value\(s\), the first at index \(3, 2\)"),
        ("inf", {}, "NaN or infinite"),
        ("rank1", {}, r"rank >= 2.*got shape \(30,\)"),
        ("shape", dict(sample_shape=(5,)), r"model expects \(5,\)"),
        ("empty", {}, "no samples"),
        ("strings", {}, "must be numeric"),
        ("labels", {}, r"30 samples but its labels have shape \(29,\)"),
        ("float_labels", {}, "labels of x must be integers"),
        ("clusters", dict(num_clusters=31), "30 samples, fewer than the 31 clusters"),
        ("range", dict(likelihood="bernoulli"), r"values in \[0\.\d+, 1.5\].*Bernoulli.*divide 8-bit pixels by 255"),
        ("negative", dict(likelihood="bernoulli"), r"values in \[-0.1, "),
    ],
)
def test_check_data_rejects(case, kwargs, match):
    x, y = good_data()
    labels = None
    if case == "nan":
        x = _with(x, (3, 2), np.nan)
    elif case == "inf":
        x = _with(x, (0, 0), -np.inf)
    elif case == "rank1":
        x = x[:, 0]
    elif case == "empty":
        x = x[:0]
    elif case == "strings":
        x = x.astype(str)
    elif case == "labels":
        labels = y[:29]
    elif case == "float_labels":
        labels = y + 0.5
    elif case == "range":
        x = _with(x, (1, 1), 1.5)
    elif case == "negative":
        x = _with(x, (1, 1), -0.1)
    with pytest.raises(ValueError, match=match):
        check_data(x, labels, **kwargs)


def test_entry_points_check_their_input():
    x, _ = good_data()
    with pytest.raises(ValueError, match="NaN"):
        constrained_dataset(_with(x, (0, 0), np.nan), batch_size=8)
    with pytest.raises(ValueError, match="rank >= 2"):
        constrained_dataset(x[:, 0], batch_size=8)
    model = DCGMM(
        (4,), num_clusters=3, encoder=MLPEncoder(2, (8,), name="encoder"), decoder=MLPDecoder(4, (8,), name="decoder")
    )
    for bad, match in (
        (x * 2, "Bernoulli"),
        (x[:2], "fewer than the 3 clusters"),
        (x[:, :3], "model expects"),
        (_with(x, (0, 1), np.inf), "infinite"),
    ):
        with pytest.raises(ValueError, match=match):
            pretrain(model, bad, epochs=0)


# --------------------------------------------------------- corrupt files ---


def test_truncated_or_corrupt_npz(tmp_path):
    x, y = good_data()
    np.savez(tmp_path / "good.npz", x_train=x, y_train=y, x_test=x, y_test=y)
    raw = (tmp_path / "good.npz").read_bytes()
    for name, data in (("truncated", raw[: len(raw) // 2]), ("garbage", b"not a zip file" * 10), ("empty", b"")):
        (tmp_path / f"{name}.npz").write_bytes(data)
        with pytest.raises(ValueError, match=f"{name}.npz is not a readable .npz file.*truncated or corrupt"):
            load_dataset(str(tmp_path / f"{name}.npz"))


# ----------------------------------------------------------------- flags ---


@pytest.mark.parametrize(
    "flag, message",
    [
        ("--epochs=0", "flag --epochs=0: 0 is not a positive integer"),
        ("--batch_size=-5", "flag --batch_size=-5: -5 is not integer >= 2"),
        ("--q=0.5", "--q must be in [0, 0.5)"),
        ("--q=-0.1", "--q must be in [0, 0.5)"),
        ("--alpha=0", "--alpha must be a finite number > 0"),
        ("--alpha=-3", "--alpha must be a finite number > 0"),
        ("--method=kmeans", "flag --method=kmeans: value should be one of <dcgmm|vade|"),
        ("--constraints_file=c.csv --max_train_samples=100", "cannot be combined with max_train_samples"),
        ("--cluster_init=labels --method=sdec", "cluster_init applies to method dcgmm or vade only"),
        ("--init_components=40 --method=pckmeans", "init_components applies to method dcgmm or vade only"),
        ("--init_components=1", "--init_components must be 0 (automatic) or at least 2."),
        ("--restart_every=7 --cluster_init=gmm", "restart_every=7 needs cluster_init merge or latent_class"),
        ("--pretrain_seed=-2", "--pretrain_seed must be -1 (the run's seed) or a seed >= 0"),
        ("--init_labels_per_class=5", "init_labels_per_class needs cluster_init labels."),
        (
            "--init_labels_per_class=1 --cluster_init=labels",
            "--init_labels_per_class must be 0 (all labels) or at least 2",
        ),
        ("--vgg_filters=32,x", "--vgg_filters must be one or more positive filter counts"),
        ("--jit_compile", "jit_compile needs deterministic off"),
    ],
)
def test_bad_flags_are_rejected_with_message(flag, message):
    """Parsed in this process: single-flag rules by absl (bounds, choices, validators), the rest by the configs."""
    from experiments import run

    with pytest.raises((flags.Error, ValueError)) as error, parsed_flags(["run", *flag.split()]):
        run.configs(FLAGS)
    assert message in str(error.value)


RUNNER_ERRORS = [
    ("run", ["--epochs=0"], "flag --epochs=0: 0 is not a positive integer"),
    ("run", ["--dataset=missing.npz"], "error: Dataset file not found: missing.npz"),
    ("table1", ["--overrides=sdec.nosuch=3", "--methods=sdec"], "error: unknown setting(s) ['nosuch']"),
    ("fig_samples", ["--restart_every=7", "--cluster_init=gmm"], "error: restart_every=7 needs cluster_init merge"),
]


@pytest.mark.parametrize("runner, args, message", RUNNER_ERRORS)
def test_every_runner_reports_bad_input_in_one_line(runner, args, message, capfd):
    """Each runner's entry point as its ``__main__`` calls it, in this process: exit status 1 and the message on
    stderr (Python prints a SystemExit's text there and exits with 1), never a traceback."""
    import importlib

    from absl import app

    module = importlib.import_module(f"experiments.{runner}")
    with pytest.raises(SystemExit) as exit_info:
        try:
            app.run(exit_on_user_error(module.main), argv=[runner, *args])
        finally:
            FLAGS.unparse_flags()
    code = exit_info.value.code
    status, stderr = (code, capfd.readouterr().err) if isinstance(code, int) else (1, f"{code}\n")
    assert status == 1
    assert message in stderr and "Traceback" not in stderr, stderr[-2000:]
    if message.startswith("error: "):  # the program's own report is its last line
        assert stderr.strip().splitlines()[-1].startswith(message)


def test_a_runner_reports_bad_input_in_one_line_from_the_command_line():
    """The same through ``python -m`` in its own process."""
    proc = subprocess.run(
        [sys.executable, "-m", "experiments.run", "--constraints_file=pairs.csv", "--max_train_samples=5"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines()[-1].startswith("error: constraints_file indexes the whole training split")


@pytest.fixture(name="cli")
def fixture_cli(tmp_path):
    """Runs experiments.run's command-line entry point in this process; returns its SystemExit message."""
    from experiments import run

    x, y = good_data(40, 6)
    np.savez(tmp_path / "toy.npz", x_train=x, y_train=y, x_test=x[:10], y_test=y[:10])

    def call(*args):
        argv = ["run", f"--dataset={tmp_path / 'toy.npz'}", f"--output_dir={tmp_path / 'out'}", "--nodeterministic"]
        with pytest.raises(SystemExit) as exit_info, parsed_flags([*argv, *args]):
            exit_on_user_error(run.main)(["run"])
        return str(exit_info.value.code)

    return call


def test_cli_reports_bad_data_and_constraints(cli, tmp_path):
    assert cli("--dataset=imagenet").startswith("error: Unknown dataset 'imagenet'")
    assert cli(f"--dataset={tmp_path / 'nothing.npz'}") == f"error: Dataset file not found: {tmp_path / 'nothing.npz'}"
    assert "40 samples, fewer than the 50 clusters" in cli("--num_clusters=50")
    assert "Cannot draw 781 distinct pairs: only 780" in cli("--num_constraints=781")
    for rows, match in (
        ("0,40,1", "line 2: j=40 is out of range"),
        ("-1,2,1", "line 2: i=-1 is negative"),
        ("0,1.5,1", "j='1.5' is not an integer"),
        ("3,3,1", "i == j == 3"),
        ("0,x,1", "j='x' is not a number"),
        ("0,1", "missing value for 'weight'"),
        ("0,1,1\n1,0,-1", r"Pair (0, 1) is given both as a must-link and as a cannot-link"),
    ):
        (tmp_path / "c.csv").write_text(f"i,j,weight\n{rows}\n")
        message = cli(f"--constraints_file={tmp_path / 'c.csv'}")
        assert message.startswith("error: ") and match in message, message
    (tmp_path / "c.csv").write_text("")
    assert "is empty; expected a header line 'i,j,weight'" in cli(f"--constraints_file={tmp_path / 'c.csv'}")
    assert not (tmp_path / "out" / "results.csv").exists()


def test_labelled_subset_draws_per_class_and_rejects_small_classes():
    y = np.repeat([0, 1, 2], [5, 8, 3])
    np.testing.assert_array_equal(labelled_subset(y, 0, seed=0), np.arange(16))
    subset = labelled_subset(y, 3, seed=1)
    assert np.bincount(y[subset]).tolist() == [3, 3, 3] and np.all(np.diff(subset) > 0)
    np.testing.assert_array_equal(subset, labelled_subset(y, 3, seed=1))
    with pytest.raises(ValueError, match="class 2 has only 3"):
        labelled_subset(y, 4, seed=0)


@pytest.mark.parametrize("bad", [np.zeros(4), np.zeros((2, 2, 2)), [[0.0, np.nan]], [[np.inf, 1.0]]])
def test_check_matrix_refuses_all_but_a_finite_matrix(bad):
    with pytest.raises(ValueError, match=r"z must be a finite \[N, F\] array, got shape"):
        check_matrix(bad, "z")


def test_check_matrix_returns_the_array_in_the_dtype_asked():
    checked = check_matrix([[1, 2], [3, 4]], "z", np.float64)
    assert checked.dtype == np.float64 and checked.shape == (2, 2)


def test_the_mixtures_refuse_non_finite_input():
    from dcgmm_tf import ConstraintSet, cluster_count, paired_mixture, starts

    x = np.random.default_rng(0).normal(size=(40, 2))
    x[3, 1] = np.nan
    with pytest.raises(ValueError, match="embeddings must be a finite"):
        starts.input_gmm(x, 2)
    with pytest.raises(ValueError, match="embeddings must be a finite"):
        cluster_count.choose_num_clusters(x, ConstraintSet.from_labels(np.arange(40) % 2, 20, seed=0), [2, 3])
    with pytest.raises(ValueError, match="x must be a finite"):
        paired_mixture.mixture_of_clusters(x, ConstraintSet.empty(40), np.arange(40) % 2, 2, "diag")
