r"""Label pairs on a local web page: the pairs active selection asks about, answered by you, with the model
retrained between rounds.

    python -m experiments.label --dataset=fashion --label_dir=labels/fashion
    # open http://127.0.0.1:8000 ; answer with J (same), K (different), space (skip), U (undo); press Retrain
    python -m experiments.run --dataset=fashion --constraints_file=labels/fashion/answers.csv

The first round asks ``--start_pairs`` random pairs; each retrain then asks the pairs that take the answers to the
next of ``--budgets``, chosen by the first of ``--strategies`` (anchor by default). Every answer is on disk in
``<label_dir>/answers.csv`` at once: stop the server at any time and start it again with the same flags to go on.
The page binds to 127.0.0.1; ``--host`` opens it to other machines, which is your decision to make. Every flag of
``experiments.run`` and of ``experiments.active`` (the schedule) applies.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from absl import app, flags

from dcgmm_tf.active_loop import ActiveSchedule
from dcgmm_tf.config import RunConfig, RuntimeConfig
from dcgmm_tf.validation import exit_on_user_error
from experiments import active as _schedule_flags  # noqa: F401 (the schedule's flags and --strategies)
from experiments import run
from experiments.config_flags import config_from_flags

if TYPE_CHECKING:
    from dcgmm_tf.labelling import LabellingSession

FLAGS = flags.FLAGS
flags.DEFINE_string("label_dir", None, "Folder of the questions, the answers (answers.csv) and the model's weights.")
flags.DEFINE_string("host", "127.0.0.1", "Address the page listens on (127.0.0.1: this machine only).")
flags.DEFINE_integer("port", 8000, "Port of the page.", lower_bound=0, upper_bound=65535)
flags.DEFINE_integer("typical", 8, "Typical members shown per cluster.", lower_bound=1)
flags.DEFINE_list(
    "image_shape",
    None,
    "Draw each sample as an image of this shape, H,W (grey) or H,W,C, when the data set stores its images as flat "
    "rows. Unset: the data set's own shape, or a square grey image when the row length is a perfect square.",
)


def open_session(
    config: RunConfig,
    runtime: RuntimeConfig,
    schedule: ActiveSchedule,
    strategy: str,
    folder: str,
    typical: int = 8,
    image_shape: tuple[int, ...] | None = None,
) -> LabellingSession:
    """The labelling session of ``config`` in ``folder`` (the data loaded here, the folder read back); the samples
    are drawn as images of ``image_shape`` or of the shape :func:`dcgmm_tf.data.dataset.with_image_shape` finds."""
    from dcgmm_tf.data import load_dataset
    from dcgmm_tf.data.dataset import with_image_shape
    from dcgmm_tf.labelling import LabellingSession

    data = load_dataset(config.dataset, runtime.data_dir, image_size=config.image_size)
    data, note = with_image_shape(data, image_shape)
    logging.warning("the page shows the samples of %s as %s", data.name, note)
    return LabellingSession(config, data, folder, schedule, strategy, runtime, typical)


def main(argv):
    del argv
    import uvicorn

    from dcgmm_tf.labelling.app import create_app
    from dcgmm_tf.runtime import configure

    if not FLAGS.label_dir:
        raise ValueError("--label_dir is required: the folder where the answers are kept")
    config, runtime = run.configs(FLAGS)
    schedule = config_from_flags(ActiveSchedule, FLAGS)
    configure(runtime)
    shape = tuple(int(v) for v in FLAGS.image_shape) if FLAGS.image_shape else None
    session = open_session(config, runtime, schedule, FLAGS.strategies[0], FLAGS.label_dir, FLAGS.typical, shape)
    if FLAGS.host not in ("127.0.0.1", "localhost", "::1"):
        logging.warning("the labelling page listens on %s: other machines can reach it", FLAGS.host)
    snapshot = session.snapshot()
    print(
        f"labelling {config.dataset} into {Path(FLAGS.label_dir) / 'answers.csv'}: {snapshot['answered']} of "
        f"{snapshot['budget']} answered; open http://{FLAGS.host}:{FLAGS.port}",
        file=sys.stderr,
        flush=True,
    )
    uvicorn.run(create_app(session), host=FLAGS.host, port=FLAGS.port, log_level="warning")


if __name__ == "__main__":
    app.run(exit_on_user_error(main))
