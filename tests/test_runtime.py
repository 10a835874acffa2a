"""The library gives the caller's random state back, and its results depend on its seeds alone."""

import gc
import importlib
import logging
import random

import keras
import numpy as np
import tensorflow as tf
from tensorflow.python.eager import context as tf_context

import dcgmm_tf
from dcgmm_tf import ConstraintSet
from dcgmm_tf.baselines.dec import SDEC
from dcgmm_tf.baselines.layerwise import StackedAutoencoder
from dcgmm_tf.model import DCGMM
from dcgmm_tf.recipe import pretrained_model
from dcgmm_tf.runtime import no_retracing_warning, process_seeds, python_generator
from tests.helpers import tensorflow_messages, toy_data, weights_equal


def caller_draws() -> tuple[float, float]:
    """The next draw of Python's and of NumPy's global generator (TensorFlow's global seed is read directly)."""
    return random.random(), float(np.random.random())


def test_process_seeds_sets_the_seeds_inside_and_restores_the_callers_after():
    keras.utils.set_random_seed(11)
    expected = caller_draws()
    keras.utils.set_random_seed(11)
    with process_seeds(3):
        inside = random.random(), float(np.random.random())
        assert tf_context.global_seed() == 3
        generator = python_generator()
        assert generator.random() == random.random()  # continues the stream without advancing it
    assert inside == (random.Random(3).random(), float(np.random.RandomState(3).random_sample()))
    assert caller_draws() == expected and tf_context.global_seed() == 11
    tf.random.set_seed(None)
    with process_seeds(3):
        pass
    assert tf_context.global_seed() is None


def test_pretrained_model_depends_on_its_seed_alone_and_leaves_the_callers_state():
    x, _ = toy_data(200)

    def build(seed: int) -> DCGMM:
        return DCGMM(x.shape[1:], num_clusters=2, latent_dim=2, seed=seed)

    weights = []
    for caller_seed in (1, 2):
        keras.utils.set_random_seed(caller_seed)
        expected = caller_draws()
        keras.utils.set_random_seed(caller_seed)
        model = pretrained_model(build, x, seed=0, epochs=1, batch_size=32, name="toy", cache_dir=None)
        weights.append(model.get_weights())
        assert caller_draws() == expected and tf_context.global_seed() == caller_seed
    assert weights_equal(weights[0], weights[1])
    other = pretrained_model(build, x, seed=1, epochs=1, batch_size=32, name="toy", cache_dir=None)
    assert not weights_equal(other.get_weights(), weights[0])


def test_dec_batch_order_is_explicit():
    """DEC's fit takes its batch order from its seed (or the generator given), not from Python's global stream."""
    x, y = toy_data(120)
    constraints = ConstraintSet.from_labels(y, 20, seed=0)

    def losses(caller_seed: int, batch_order: random.Random | None = None) -> list[float]:
        with process_seeds(0):
            model = SDEC(StackedAutoencoder(x.shape[1], latent_dim=2, hidden_units=(8,)).encoder, 2)
        model.compile(optimizer="sgd")
        model.initialize_centers(x, seed=0)
        random.seed(caller_seed)
        state = random.getstate()
        history = model.fit_clusters(x, constraints, epochs=2, batch_size=32, tol=0.0, seed=0, batch_order=batch_order)
        assert random.getstate() == state
        return [log["loss"] for log in history]

    first = losses(1)
    # An epoch's mean loss is a float32 sum whose order the thread pool may change (seen: 1e-7 relative); another
    # batch order moves it far more, as the last line shows.
    np.testing.assert_allclose(losses(2), first, rtol=1e-6)
    assert not np.allclose(losses(1, random.Random(1)), first, rtol=1e-6, atol=0)


def test_importing_the_library_leaves_the_cyclic_collector_as_it_was():
    """The collector is paused while the package imports its dependencies, then set back."""
    try:
        for enabled in (False, True):
            (gc.enable if enabled else gc.disable)()
            importlib.reload(dcgmm_tf)
            assert gc.isenabled() is enabled
    finally:
        gc.enable()


def test_the_retracing_warning_is_held_back_inside_the_block_only_and_other_lines_pass():
    logger = logging.getLogger("tensorflow")
    retracing = "5 out of the last 9 calls to <function f> triggered tf.function retracing. Tracing is expensive"
    with tensorflow_messages() as seen:
        with no_retracing_warning():
            logger.warning(retracing)
            logger.warning("something else")
        logger.warning(retracing)
    assert seen == ["something else", retracing]
