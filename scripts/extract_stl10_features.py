r"""Extract the ImageNet ResNet-50 features of the 13,000 labelled STL-10 images (the paper's STL-10 input).

    python scripts/extract_stl10_features.py                 # -> data/stl10/stl10_resnet50.npz
    python scripts/extract_stl10_features.py --stl_dir=/data/stl10_binary --output=/data/stl10/stl10_resnet50.npz

Reads train_X.bin, train_y.bin, test_X.bin and test_y.bin from --stl_dir, or from the first of --data_dir,
$DCGMM_DATA and <repo>/data (or their stl10/ and stl10_binary/ sub-folders) that has them, or downloads
the 2.6 GB archive there when online. Images are resized to --image_size, preprocessed as Keras'
ResNet-50 expects, and average-pooled to 2,048 features. --weights=imagenet needs the Keras weights file
(downloaded on first use); --weights=none runs a random network (for testing only).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from absl import app, flags, logging

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dcgmm_tf.data import paths, stl10  # noqa: E402  pylint: disable=wrong-import-position
from dcgmm_tf.storage import write_atomically  # noqa: E402  pylint: disable=wrong-import-position

FLAGS = flags.FLAGS
flags.DEFINE_string("stl_dir", None, "Folder holding the STL-10 binaries (default: searched, else downloaded).")
flags.DEFINE_string("data_dir", None, "Data folder searched first (as in experiments/run.py).")
flags.DEFINE_string("output", None, "Output .npz (default: <first data folder>/stl10/stl10_resnet50.npz).")
flags.DEFINE_string("weights", "imagenet", "imagenet, a weights file, or none (random network).")
flags.DEFINE_integer("image_size", 224, "Images are resized to this square size before the network.")
flags.DEFINE_integer("batch_size", 64, "Images per forward pass.")
flags.DEFINE_boolean("download", True, "Download the binaries when they are not found.")


def main(argv):
    del argv
    import numpy as np

    stl_dir = Path(FLAGS.stl_dir) if FLAGS.stl_dir else stl10.find_binaries(FLAGS.data_dir)
    searched = paths.search_dirs(stl10.SUBFOLDER, FLAGS.data_dir)
    data_root = searched[0]
    if stl_dir is None:
        if not FLAGS.download:
            raise FileNotFoundError(
                f"STL-10 binaries not found (searched: {[str(d) for d in searched]}) and --nodownload"
            )
        logging.info("downloading %s into %s", stl10.URL, data_root)
        stl_dir = stl10.download_binaries(data_root)
    images, labels = stl10.read_labelled(stl_dir)
    logging.info("%d labelled images from %s", len(images), stl_dir)
    weights = None if FLAGS.weights.lower() == "none" else FLAGS.weights
    start = time.perf_counter()
    features = stl10.extract_features(images, weights, FLAGS.image_size, FLAGS.batch_size)
    logging.info("features %s in %.1f s", features.shape, time.perf_counter() - start)
    output = Path(FLAGS.output) if FLAGS.output else data_root / stl10.FEATURES_FILE

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:  # a file object: np.savez would append ".npz" to a name
            np.savez(f, features=features, labels=labels)

    write_atomically(output, write)
    print(f"wrote {output}: features {features.shape}, labels {labels.shape}")


if __name__ == "__main__":
    app.run(main)
