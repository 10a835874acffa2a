"""Scratch: the runner with each HOG feature divided by its maximum over the training split (not in the library)."""

import dataclasses

import numpy as np
from absl import app

import dcgmm_tf.prepared as prepared
from dcgmm_tf.data import features

_plain = features.with_input_features


def scaled(data, which):
    out = _plain(data, which)
    if which != "hog":
        return out
    top = out.x_train.max(0)
    top[top == 0] = 1
    return dataclasses.replace(
        out, x_train=(out.x_train / top).astype(np.float32), x_test=np.minimum(out.x_test / top, 1).astype(np.float32)
    )


prepared.with_input_features = scaled
from experiments import run  # noqa: E402

app.run(run.exit_on_user_error(run.main))
