"""Training DC-GMM on several devices or machines with ``tf.distribute``.

The pairwise term couples the samples of a constraint, so both ends of a pair must be on the same replica.
:func:`distributed_constrained_dataset` builds every global batch exactly as on one device and shares it
out over the replicas without cutting a constraint (the global W becomes block-diagonal, one block per
replica); :meth:`DCGMM.train_step` weights each replica's loss by its share of the global batch, so the
summed gradients are those of the global batch::

    strategy = make_strategy("mirrored")
    with strategy.scope():
        model = DCGMM((784,), num_clusters=10)
        model.compile(optimizer=keras.optimizers.Adam(1e-3))
    data, steps = distributed_constrained_dataset(strategy, x, constraints, batch_size=256)
    model.fit(data, epochs=500, steps_per_epoch=steps)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from dcgmm_tf.config import DISTRIBUTION_STRATEGIES
from dcgmm_tf.constraints import ConstraintSet
from dcgmm_tf.data.pipeline import batch_elements, checked_inputs, epoch_arrays, epoch_rows, prefetch_without_autotune


def make_strategy(name: str = "default") -> tf.distribute.Strategy:
    """``"default"`` (one device), ``"mirrored"`` (all local GPUs, else the CPU) or ``"multiworker"``.

    ``"multiworker"`` is ``MultiWorkerMirroredStrategy``: the cluster and this worker's role come from the
    ``TF_CONFIG`` environment variable (see docs/distributed.md); create it before any other TF operation.
    """
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    if name == "multiworker":
        return tf.distribute.MultiWorkerMirroredStrategy()
    raise ValueError(f"strategy must be one of {DISTRIBUTION_STRATEGIES}, got {name!r}")


def is_multi_worker(strategy: tf.distribute.Strategy) -> bool:
    """Whether ``strategy`` is a MultiWorkerMirroredStrategy over more than one worker (TF_CONFIG's chief and
    workers). Keras then reduces a step's logs with ``reduce("MEAN", axis=0)``, which fails on scalars
    (tensorflow/tensorflow#72388), and a multi-step call (``steps_per_execution`` > 1) fails in its collective ops."""
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return False
    cluster = strategy.cluster_resolver.cluster_spec().as_dict()
    return sum(len(cluster.get(job, ())) for job in ("chief", "worker")) > 1


def common_epoch(strategy: tf.distribute.Strategy, epochs: Sequence[int], max_epoch: int) -> int:
    """The latest of ``epochs`` (this worker's usable backups) that every worker of ``strategy`` has too, or 0
    (the beginning) when there is none: all workers then resume from the same epoch. One all-reduce across the
    workers, so every worker must call it at the same point.

    Args:
      strategy: The strategy whose replicas train.
      epochs: The epochs after which this worker has a backup; those outside ``1..max_epoch`` are ignored.
      max_epoch: The number of epochs of the training.
    """
    have = np.zeros(max_epoch + 1, np.float32)
    have[0] = 1.0  # the beginning: every worker has it
    have[[e for e in epochs if 0 < e <= max_epoch]] = 1.0
    total = strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(lambda: tf.constant(have)), axis=None)
    return int(np.flatnonzero(np.asarray(total) == strategy.num_replicas_in_sync).max())


def distributed_constrained_dataset(
    strategy: tf.distribute.Strategy,
    x: np.ndarray,
    constraints: ConstraintSet | None = None,
    batch_size: int = 256,
    seed: int = 0,
    layout: str = "separate",
    initial_epoch: int = 0,
) -> tuple[tf.distribute.DistributedDataset, int]:
    """:func:`dcgmm_tf.data.constrained_dataset` for ``strategy``; returns the dataset and the steps per epoch.

    ``batch_size`` is the global batch. The batches are those of one device (the same seed gives the same
    epochs), each cut into ``strategy.num_replicas_in_sync`` parts that keep linked samples together
    (:func:`dcgmm_tf.data.pipeline.replica_parts`). Every worker generates the same batches and takes its
    own replicas' parts. The dataset runs through epochs ``initial_epoch, initial_epoch + 1, ...`` without
    end, so pass the returned steps to ``fit(..., steps_per_epoch=steps)``.
    """
    x, constraints, steps = checked_inputs(x, constraints, batch_size, layout)
    return distributed_epoch_dataset(strategy, x, constraints, batch_size, seed, layout, initial_epoch), steps


def distributed_epoch_dataset(
    strategy: tf.distribute.Strategy,
    x: np.ndarray,
    constraints: ConstraintSet,
    batch_size: int,
    seed: int,
    layout: str,
    initial_epoch: int,
) -> tf.distribute.DistributedDataset:
    """:func:`distributed_constrained_dataset`'s dataset for inputs that
    :func:`dcgmm_tf.data.pipeline.checked_inputs` returned already."""
    num_replicas = strategy.num_replicas_in_sync

    def make(epoch: int) -> tuple[np.ndarray, ...]:
        return epoch_arrays(len(x), constraints, batch_size, seed, epoch, layout, num_replicas)

    def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
        # The epoch number is part of the dataset (not of Python state), so every new iterator (Keras opens
        # one to build the model) starts again at ``initial_epoch``. Elements are the replicas' parts in
        # order; worker p of P takes parts p, p + P, ..., which tf.distribute hands to its replicas in turn
        # (sharded before the samples are gathered).
        epochs = tf.data.Dataset.range(initial_epoch, np.iinfo(np.int64).max)
        parts = epoch_rows(make, epochs).shard(context.num_input_pipelines, context.input_pipeline_id)
        return prefetch_without_autotune(batch_elements(parts, x))

    return strategy.distribute_datasets_from_function(dataset_fn)
