r"""How good is the initial mixture? Test ACC of each start strategy by pretraining length and data.

    python -m experiments.init_quality --dataset=fashion --seeds=0,1,2 --pretrain_epochs=10 \
        --strategies=gmm,merge,latent_class --gmm_states=3 --threads=1
    python -m experiments.init_quality --dataset=fashion --seeds=0 --pretrain_epochs=10,30,60 --strategies=gmm

For each seed the autoencoder is pretrained once, continued to each --pretrain_epochs value in turn; after
each, every start of --strategies (``dcgmm_tf.cluster_init``; gmm is what ``dcgmm_tf.pretrain`` does) is
computed with --gmm_states random states on the training embeddings and the seed's constraints, and scored
on the test split, together with the constraint satisfaction of its training assignments and the ACC of the
label-aligned mixture (``cluster_prior_from_labels``) for reference. One CSV row per (seed, epochs, strategy,
state) in <output_dir>/init_quality.csv.
"""

from __future__ import annotations

from pathlib import Path

from absl import app, flags

from dcgmm_tf.validation import exit_on_user_error

FLAGS = flags.FLAGS
flags.DEFINE_string("dataset", "fashion", "Data set name or .npz path (as in run.py).")
flags.DEFINE_string("data_dir", None, "Directory searched first for data files.")
flags.DEFINE_list("seeds", ["0"], "Pretraining seeds.")
flags.DEFINE_list("pretrain_epochs", ["10", "30", "60"], "Increasing autoencoder epochs at which to fit the GMMs.")
flags.DEFINE_enum(
    "pretrain_on",
    "train",
    ["train", "train_test"],
    "Pretraining images: the training split, or training + test images (the authors' code).",
)
flags.DEFINE_list("strategies", ["gmm"], "Start strategies (dcgmm_tf.cluster_init.START_STRATEGIES).")
flags.DEFINE_integer("gmm_states", 3, "Random states (of the GMMs) per checkpoint and strategy.")
flags.DEFINE_integer("num_constraints", 6000, "Constraints (drawn with the seed) for the satisfaction column.")
flags.DEFINE_integer("threads", 0, "TensorFlow intra-op threads (0: all cores).")
flags.DEFINE_string("output_dir", "results/init_quality", "Where init_quality.csv goes.")


def main(argv):
    del argv
    import keras
    import numpy as np

    from dcgmm_tf import DCGMM, ConstraintSet, metrics
    from dcgmm_tf.cluster_init import START_STRATEGIES, cluster_start
    from dcgmm_tf.data import load_dataset
    from dcgmm_tf.pretraining import cluster_prior_from_labels, pretrain_autoencoder
    from dcgmm_tf.runtime import set_threads
    from experiments import results

    set_threads(FLAGS.threads)
    epochs = sorted(int(e) for e in FLAGS.pretrain_epochs)
    if epochs[0] < 1:
        raise ValueError("--pretrain_epochs must all be at least 1")
    if not set(FLAGS.strategies) <= set(START_STRATEGIES):
        raise ValueError(f"--strategies must be among {START_STRATEGIES}, got {FLAGS.strategies}")
    data = load_dataset(FLAGS.dataset, FLAGS.data_dir)
    x_train, y_train, x_test, y_test = data.x_train, data.y_train, data.x_test, data.y_test
    x_pretrain = x_train if FLAGS.pretrain_on == "train" else np.concatenate([x_train, x_test])
    output = Path(FLAGS.output_dir) / "init_quality.csv"
    for seed in (int(s) for s in FLAGS.seeds):
        keras.utils.set_random_seed(seed)
        constraints = ConstraintSet.from_labels(y_train, FLAGS.num_constraints, seed=seed)
        model = DCGMM(x_train.shape[1:], num_clusters=data.num_classes, likelihood=data.likelihood, seed=seed)
        done = 0
        for total in epochs:
            # Continue the same autoencoder; a new shuffling seed per stretch keeps the order fresh.
            pretrain_autoencoder(model, x_pretrain, epochs=total - done, seed=seed + done, verbose=0)
            done = total
            cluster_prior_from_labels(model, x_train, y_train)
            aligned_acc = metrics.cluster_accuracy(y_test, model.predict(x_test, verbose=0).argmax(-1))
            z = model.embed(x_train)
            for strategy, state in ((s, k) for s in FLAGS.strategies for k in range(FLAGS.gmm_states)):
                start = cluster_start(
                    z, constraints, model.num_clusters, strategy, seed=state, min_variance=2 * model.min_variance
                )
                model.set_cluster_parameters(start.means, start.variances)
                row = {
                    "dataset": data.name,
                    "seed": seed,
                    "pretrain_on": FLAGS.pretrain_on,
                    "pretrain_epochs": total,
                    "strategy": strategy,
                    "gmm_state": state,
                    "test_acc": metrics.cluster_accuracy(y_test, model.predict(x_test, verbose=0).argmax(-1)),
                    "constraint_satisfaction": metrics.constraint_satisfaction(
                        constraints, model.predict(x_train, verbose=0).argmax(-1)
                    ),
                    "label_aligned_test_acc": aligned_acc,
                }
                results.append_row(output, row)
                print(row, flush=True)


if __name__ == "__main__":
    app.run(exit_on_user_error(main))
