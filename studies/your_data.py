r"""The estimator on data as people bring it: small tabular sets, any scale, K chosen from the pairs.

    python -m studies.your_data --part=small --output_dir=studies/results/your_data          # wine, breast cancer
    python -m studies.your_data --part=scale --output_dir=studies/results/your_data          # X against a X + b
    python -m studies.your_data --part=num_clusters --output_dir=studies/results/your_data   # K="auto"
    python -m studies.your_data --part=checks --output_dir=studies/results/your_data         # scikit-learn's checks
    python -m studies.your_data --part=small --tiny --seeds=0 --output_dir=/tmp/yd           # a quick run (tiny fits)

Every part (``studies.your_data_parts``) appends rows to ``<output_dir>/<part>.csv`` (one row per fit) and
prints them: ``small`` with ``--pairs`` pairs, ``num_clusters`` with Fashion-MNIST from ``--cache_dir``, ``checks``
on ``--epochs`` epochs.
"""

from __future__ import annotations

from pathlib import Path

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_enum("part", "small", ["small", "scale", "num_clusters", "checks"], "What to measure.")
flags.DEFINE_list("seeds", ["0", "1", "2"], "Seeds.")
flags.DEFINE_integer("pairs", 300, "Pairs from the labels for the small sets' second row.")
flags.DEFINE_string("output_dir", "studies/results/your_data", "Folder of the CSV files.")
flags.DEFINE_string("cache_dir", "data/cache", "The runner's pretraining cache (Fashion-MNIST in num_clusters).")
flags.DEFINE_integer("epochs", 2, "Training epochs of the tiny schedule (the checks part, and --tiny).")
flags.DEFINE_bool("tiny", False, "Every fit tiny (a 32-32 network, --epochs epochs): a quick run of the command.")
flags.DEFINE_list("link_types", ["both", "must", "cannot"], "num_clusters: the link types of the pairs.")
flags.DEFINE_list("likelihoods", ["bernoulli", "gaussian"], "scale: the decoder likelihoods to fit with.")
flags.register_validator(
    "likelihoods", lambda v: set(v) <= {"bernoulli", "gaussian"}, "--likelihoods must be among bernoulli, gaussian"
)
flags.DEFINE_bool("train", True, "num_clusters: also train at the chosen and the true K (both link types).")


def _define_auto_or_epochs(name: str, default: str, help_text: str) -> None:
    """A flag of epochs that also takes "auto", refused at the flags otherwise."""
    flags.DEFINE_string(name, default, help_text)
    flags.register_validator(
        name, lambda v: v == "auto" or v.isdigit(), f"--{name} must be 'auto' or a non-negative integer"
    )


def _auto_or_epochs(value: str) -> int | str:
    """The value of a flag of :func:`_define_auto_or_epochs`: "auto" or its epochs."""
    return value if value == "auto" else int(value)


_define_auto_or_epochs(
    "probe_epochs", "0", "num_clusters: probe_epochs of the n_clusters='auto' fit ('auto', or epochs; 0: no probes)."
)
_define_auto_or_epochs(
    "pair_tuning_epochs",
    "0",
    "pair_tuning_epochs of every estimator fit when given ('auto', or epochs; 0, the estimator's default: no tuning "
    "with the pairs); without it the estimator's default.",
)
_define_auto_or_epochs(
    "choice_tuning_epochs",
    "auto",
    "choice_tuning_epochs of every n_clusters='auto' fit when given ('auto', the estimator's default, "
    "or epochs; 0: K chosen on the pretrained embedding); without it the estimator's default or --tiny's.",
)
flags.DEFINE_list(
    "datasets",
    ["digits", "blobs", "fashion", "wine"],
    "Data sets of the num_clusters (digits, blobs, fashion) and scale (digits, wine) parts.",
)


def main(argv: list[str]) -> None:
    del argv
    from studies import your_data_parts as parts

    seeds = [int(s) for s in FLAGS.seeds]
    params = parts.tiny_schedule(FLAGS.epochs, seeds[0]) if FLAGS.tiny else {}
    for name in ("pair_tuning_epochs", "choice_tuning_epochs"):
        if FLAGS[name].present:  # else the estimator's default, or the tiny schedule's
            params[name] = _auto_or_epochs(FLAGS[name].value)
    params = params or None
    runs = {
        "small": lambda: parts.small(seeds, FLAGS.pairs, params),
        "scale": lambda: parts.scale(seeds, FLAGS.datasets, FLAGS.pairs, params, FLAGS.likelihoods),
        "num_clusters": lambda: parts.num_clusters(
            seeds,
            FLAGS.datasets,
            FLAGS.link_types,
            FLAGS.train,
            Path(FLAGS.cache_dir),
            params,
            probe_epochs=_auto_or_epochs(FLAGS.probe_epochs),
        ),
        "checks": lambda: parts.checks(seeds, FLAGS.epochs),
    }
    frame = parts.write_rows(runs[FLAGS.part](), Path(FLAGS.output_dir), FLAGS.part)
    print(frame.to_string(index=False))


if __name__ == "__main__":
    app.run(main)
