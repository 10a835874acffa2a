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
    from dcgmm_tf.data import load_dataset
    from dcgmm_tf.runtime import set_threads
    from experiments.init_quality_parts import check_arguments, start_quality

    set_threads(FLAGS.threads)
    check_arguments(FLAGS.pretrain_epochs, FLAGS.strategies)  # before the data set is read
    start_quality(
        load_dataset(FLAGS.dataset, FLAGS.data_dir),
        [int(s) for s in FLAGS.seeds],
        [int(e) for e in FLAGS.pretrain_epochs],
        FLAGS.strategies,
        FLAGS.gmm_states,
        FLAGS.num_constraints,
        FLAGS.pretrain_on,
        FLAGS.output_dir,
    )


if __name__ == "__main__":
    app.run(exit_on_user_error(main))
