"""Faster optimizers for the TensorFlow backend."""

from __future__ import annotations

import keras
import tensorflow as tf

from dcgmm_tf.shims import ScaleWhenClipping


@keras.saving.register_keras_serializable(package="dcgmm_tf")
class FusedAdam(ScaleWhenClipping, keras.optimizers.Adam):
    """``keras.optimizers.Adam`` computed by TensorFlow's fused ``ApplyAdam`` kernel.

    The same update (and arguments) as Keras' Adam, but each variable is read and written in one pass instead
    of about ten separate element-wise kernels: on a 2-core CPU the update of the paper's 3.4M-parameter
    network takes ~3 ms instead of ~10 ms, a quarter of a training step (see docs/performance.md). Gradient
    clipping (a step under ``global_clipnorm`` leaves its gradients unscaled:
    :class:`dcgmm_tf.shims.ScaleWhenClipping`), learning-rate schedules, loss scaling and ``tf.distribute`` work as
    with ``Adam``; ``amsgrad`` is not supported.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.amsgrad:
            raise ValueError("FusedAdam does not support amsgrad; use keras.optimizers.Adam")

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        step = tf.cast(self.iterations + 1, dtype)
        beta_1 = tf.cast(self.beta_1, dtype)
        beta_2 = tf.cast(self.beta_2, dtype)
        index = self._get_variable_index(variable)
        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle,
            m=self._momentums[index].value.handle,
            v=self._velocities[index].value.handle,
            beta1_power=tf.pow(beta_1, step),
            beta2_power=tf.pow(beta_2, step),
            lr=tf.cast(learning_rate, dtype),
            beta1=beta_1,
            beta2=beta_2,
            epsilon=tf.cast(self.epsilon, dtype),
            grad=tf.cast(gradient, dtype),
        )


def adam(learning_rate: float, fused: bool) -> keras.optimizers.Adam:
    """Adam at ``learning_rate``: :class:`FusedAdam` when ``fused``, else Keras' own."""
    return FusedAdam(learning_rate) if fused else keras.optimizers.Adam(learning_rate)
