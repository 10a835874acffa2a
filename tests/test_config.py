"""The run and runtime configs: checks, identity keys, and the flags made from them."""

import dataclasses
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from absl import flags

from dcgmm_tf.config import KEY_VERSION, RunConfig, RuntimeConfig
from experiments.config_flags import config_from_flags, define_flags, replaced
from tests.helpers import OLDER_RECIPE, parsed_flags

REPO = Path(__file__).resolve().parent.parent


def test_key_ignores_the_seed_and_follows_every_other_field():
    base = RunConfig()
    assert base.key() == RunConfig(seed=7).key()
    for field in dataclasses.fields(RunConfig):
        if field.name == "seed":
            continue
        value = getattr(base, field.name)
        other = {
            bool: lambda v: not v,
            int: lambda v: v + 2,
            float: lambda v: v + 0.125,
            str: lambda v: "x",
            tuple: lambda v: (*v, 8),
        }
        changed = other[type(value)](value) if value is not None else {"alpha": 5.0}.get(field.name, "f.csv")
        try:
            config = dataclasses.replace(base, **{field.name: changed})
        except ValueError:  # not a valid value for this field (e.g. a choice): covered below
            continue
        assert config.key() != base.key(), field.name
    # A field of one kind of run (the choice of K's) and the baselines' unused mixture settings are hashed too.
    assert RunConfig(choice_weights="fitted").key() != base.key()
    assert RunConfig(method="pckmeans", init_em_starts=10).key() != RunConfig(method="pckmeans").key()


def test_key_is_versioned_and_pinned():
    """The key carries its version; a change of the hashed settings (a new field) changes every key, so it comes
    with a new KEY_VERSION and a step of scripts/migrate_results.py, and with new values here, unless the new field
    is left out of the hash at its old behaviour's value (UNHASHED_VALUES)."""
    assert KEY_VERSION == 2
    assert RunConfig().key() == "v2-8314690f155d"
    # A field added within the version is left out of the key at the value that acts as the code before it.
    assert RunConfig(fused_adam=False).key() == "v2-f32d45253205"
    assert RunConfig(**OLDER_RECIPE).key() == "v2-9b1d9f270a55"


def test_numbers_are_normalised_so_equal_settings_give_one_key():
    config = RunConfig(clipnorm=300, learning_rate=1, vgg_filters=[32, 64])
    assert config.clipnorm == 300.0 and isinstance(config.clipnorm, float) and config.vgg_filters == (32, 64)
    assert config.key() == RunConfig(clipnorm=300.0, learning_rate=1.0).key()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"epochs": 0}, "epochs must be at least 1"),
        ({"q": 0.5}, "q must be in [0, 0.5)"),
        ({"alpha": float("inf")}, "alpha must be a finite number > 0"),
        ({"method": "kmeans"}, "method must be one of ['dcgmm', 'vade', 'pckmeans', 'sdec', 'cidec']"),
        ({"num_clusters": 1}, "num_clusters must be -1 (the number of classes), 0 (chosen) or at least 2"),
        ({"cluster_init": "gmm", "restart_every": 7}, "restart_every=7 needs cluster_init merge or latent_class"),
        ({"method": "sdec", "init_components": 30}, "init_components applies to method dcgmm or vade only"),
        ({"cluster_init": "kmeans", "restart_every": 7}, "restart_every=7 needs cluster_init merge or latent_class"),
        ({"init_labels_per_class": 3}, "init_labels_per_class needs cluster_init labels"),
        ({"constraints_file": "c.csv", "max_train_samples": 10}, "cannot be combined with max_train_samples"),
    ],
)
def test_bad_run_configs_raise(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        RunConfig(**kwargs)


def test_runtime_config_rules():
    with pytest.raises(ValueError, match="jit_compile needs deterministic off"):
        RuntimeConfig(jit_compile=True)
    assert RuntimeConfig(jit_compile=True, deterministic=False).jit_compile
    with pytest.raises(ValueError, match="verbose must be at most 2"):
        RuntimeConfig(verbose=3)


@pytest.fixture(name="flag_values")
def fixture_flag_values():
    values = flags.FlagValues()
    define_flags(RunConfig, values)
    define_flags(RuntimeConfig, values)
    return values


def test_flags_give_the_config_of_their_values(flag_values):
    flag_values(
        [
            "prog",
            "--epochs=30",
            "--vgg_filters=4,8",
            "--alpha=50",
            "--nodeterministic",
            "--threads=1",
            "--method=vade",
            "--cluster_init=gmm",
            "--restart_every=0",
        ]
    )
    config = config_from_flags(RunConfig, flag_values)
    assert config == RunConfig(
        epochs=30, vgg_filters=(4, 8), alpha=50.0, method="vade", cluster_init="gmm", restart_every=0
    )
    assert config_from_flags(RuntimeConfig, flag_values) == RuntimeConfig(deterministic=False, threads=1)
    assert (
        flag_values["epochs"].help
        == dataclasses.fields(RunConfig)[[f.name for f in dataclasses.fields(RunConfig)].index("epochs")].metadata[
            "help"
        ]
    )


def test_flags_reject_what_the_config_rejects(flag_values):
    for args in (["--epochs=0"], ["--q=0.7"], ["--layout=diagonal"], ["--init_components=1"], ["--verbose=5"]):
        with pytest.raises(flags.IllegalFlagValueError):
            flag_values(["prog", *args])
        flag_values.unparse_flags()


def test_replaced_parses_text_by_the_flags(flag_values):
    flag_values(["prog"])
    config = replaced(RunConfig(), flag_values, epochs="30", vgg_filters="4,8", transitive_closure="true")
    assert config.epochs == 30 and config.vgg_filters == (4, 8) and config.transitive_closure is True
    with pytest.raises(ValueError, match=r"unknown setting\(s\) \['nosuch'\]"):
        replaced(RunConfig(), flag_values, nosuch="1")
    with pytest.raises(ValueError, match="epochs='many'"):
        replaced(RunConfig(), flag_values, epochs="many")
    with pytest.raises(ValueError, match="epochs='0': 0 is not a positive integer"):
        replaced(RunConfig(), flag_values, epochs="0")


def test_protocols_name_the_paper_and_the_variant():
    assert RunConfig.protocol("default") == RunConfig()
    assert RunConfig.protocol("paper").pair_tuning_epochs == RunConfig(**OLDER_RECIPE).pair_tuning_epochs == 0
    # The baselines take (and ignore) the mixture's restart period and EM starts, so that one set of flags serves
    # every method of Table 1; their start is an error, as restarts with a start that does not use the pairs.
    assert RunConfig(**OLDER_RECIPE, method="pckmeans").restart_every == 10
    assert RunConfig(method="sdec", init_em_starts=5).init_em_starts == 5
    with pytest.raises(ValueError, match="cluster_init applies to method dcgmm or vade only"):
        RunConfig(method="sdec", cluster_init="gmm")
    with pytest.raises(ValueError, match="restart_every=10 needs cluster_init merge or latent_class"):
        RunConfig(cluster_init="gmm", restart_every=10)
    assert RunConfig(cluster_init="gmm", restart_every=0).restart_every == 0
    paper = RunConfig.protocol("paper", seed=3)
    assert (paper.cluster_init, paper.pretrain_epochs, paper.epochs, paper.lr_schedule, paper.seed) == (
        "gmm",
        10,
        500,
        "staircase",
        3,
    )
    assert paper.spread_neighbours == RunConfig(**OLDER_RECIPE).spread_neighbours == 0  # the answers alone
    # The variant's rows (docs/results/fashion/variant) were measured with its flags and keep their key.
    variant = RunConfig.protocol("variant")
    assert variant == RunConfig(
        pair_loss="likelihood", input_features="hog_scaled", epochs=20, mixed_precision="off", fused_adam=False
    )
    assert variant.cluster_init == RunConfig().cluster_init
    with pytest.raises(ValueError, match=re.escape("protocol must be one of ['default', 'paper', 'variant']")):
        RunConfig.protocol("mine")


@pytest.mark.parametrize(
    "argv, expected",
    [
        ([], RunConfig()),
        (["--protocol=paper"], RunConfig.protocol("paper")),
        (["--protocol=paper", "--epochs=7"], RunConfig.protocol("paper", epochs=7)),
        (["--protocol=variant", "--lr_schedule=staircase"], RunConfig.protocol("variant", lr_schedule="staircase")),
        (["--epochs=100"], RunConfig(epochs=100)),
        (["--protocol=variant", "--q=0.2"], RunConfig.protocol("variant", q=0.2)),
    ],
)
def test_the_runner_takes_a_protocol_and_the_flags_given_win(argv, expected):
    from experiments import run

    with parsed_flags(["run", *argv]) as values:
        assert run.configs(values)[0] == expected


def test_num_constraints_is_taken_without_a_warning_and_num_pairs_is_a_silent_alias():
    from experiments import run

    for flag in ("--num_constraints=300", "--num_pairs=300"):
        with parsed_flags(["run", flag]) as values, warnings.catch_warnings():
            warnings.simplefilter("error")
            assert run.configs(values)[0] == RunConfig(num_constraints=300)
    with parsed_flags(["run", "--num_pairs=300", "--num_constraints=200"]) as values:
        with pytest.raises(ValueError, match="give one of them, not both"):
            run.configs(values)
    assert RunConfig(num_constraints=6000).key() == RunConfig().key()


def test_config_and_the_runner_flags_load_no_tensorflow():
    """config.py is a leaf: reading settings and flags (and a flag error) costs no TensorFlow import."""
    code = "import sys, dcgmm_tf.config, experiments.run; assert 'tensorflow' not in sys.modules, 'tensorflow'"
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
