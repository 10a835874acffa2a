"""Op-level timings from a TensorFlow profile, read without TensorBoard.

``tf.profiler`` writes the trace as an XSpace protobuf; TensorFlow ships its schema, so the op events can be summed
here directly. On CPU every executed op leaves one event named ``"<op name>:<op type>"`` on the thread that ran it.
"""

from __future__ import annotations

import collections
import glob
import os
import re
import tempfile
from collections.abc import Callable

PARTS = ("layer matmuls", "optimizer", "backward, other", "forward, other")
_OP_TYPE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def profile_op_times(fn: Callable, args: tuple, steps: int, logdir: str | None = None) -> dict[tuple[str, str], float]:
    """Run ``fn(*args)`` ``steps`` times under ``tf.profiler``; seconds per call of every (op name, op type).

    ``fn`` should be a traced and warmed-up ``tf.function``, so that the profile holds only the steady state.
    """
    import tensorflow as tf

    with tempfile.TemporaryDirectory() as tmp:
        logdir = logdir or tmp
        tf.profiler.experimental.start(logdir)
        try:
            for _ in range(steps):
                fn(*args)
        finally:
            tf.profiler.experimental.stop()
        return {key: seconds / steps for key, seconds in read_op_times(logdir).items()}


def read_op_times(logdir: str) -> dict[tuple[str, str], float]:
    """Total seconds of every (op name, op type) in the newest host-CPU profile under ``logdir``."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    files = sorted(glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb")), key=os.path.getmtime)
    if not files:
        raise FileNotFoundError(f"no *.xplane.pb profile under {logdir}")
    space = xplane_pb2.XSpace()
    with open(files[-1], "rb") as f:
        space.ParseFromString(f.read())
    times: dict[tuple[str, str], float] = collections.defaultdict(float)
    for plane in space.planes:
        if not plane.name.startswith("/host:CPU"):
            continue
        for line in plane.lines:
            for event in line.events:
                label = plane.event_metadata[event.metadata_id].name
                name, _, op_type = label.rpartition(":")
                if name and " " not in name and "::" not in label and _OP_TYPE.match(op_type):
                    times[(name, op_type)] += event.duration_ps * 1e-12
    return dict(times)


def categorize(name: str, op_type: str, optimizer_scope: str) -> str:
    """Which part of a training step an op belongs to (one of :data:`PARTS`).

    Layer matmuls are the (oneDNN) MatMul kernels of the forward and backward pass; the batched matmul of the
    pairwise term is loss work. Optimizer ops live under the optimizer's name scope (Keras may suffix ``_1``),
    gradient ops under ``gradient_tape/``.
    """
    if re.fullmatch(re.escape(optimizer_scope) + r"(_\d+)?", name.split("/")[0]):
        return "optimizer"
    if "MatMul" in op_type and "BatchMatMul" not in op_type:
        return "layer matmuls"
    if name.startswith("gradient_tape/"):
        return "backward, other"
    return "forward, other"


def parts(op_times: dict[tuple[str, str], float], optimizer_scope: str) -> dict[str, float]:
    """Seconds per part (:data:`PARTS`), summed over ``op_times``."""
    out = dict.fromkeys(PARTS, 0.0)
    for (name, op_type), seconds in op_times.items():
        out[categorize(name, op_type, optimizer_scope)] += seconds
    return out
