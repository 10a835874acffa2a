r"""What bf16 mixed precision and XLA change in a trained model's outputs (cheap stand-in for accuracy runs).

    nice -n 5 python -m bench.precision --model=/tmp/bench-options/fp32/runs/dcgmm-fashion_mnist-seed0/model.keras

Loads a trained DC-GMM (e.g. the ``fp32`` run of ``bench.options``) and evaluates the same weights on the
10,000 Fashion-MNIST test images in fp32, in bf16 mixed precision and with XLA: test ACC of each, the share of
test images whose cluster changes against fp32, the largest change of p(c|x), and the loss terms of one batch
(with fixed noise).
"""

from __future__ import annotations

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_string("model", None, "A trained DC-GMM saved as .keras.")
flags.DEFINE_string("output", None, "Append the results as one JSON line to this file.")
flags.mark_flag_as_required("model")


def main(argv):
    del argv
    import keras
    import numpy as np

    from bench.common import machine, report
    from dcgmm_tf import DCGMM, metrics
    from dcgmm_tf.data import load_dataset

    data = load_dataset("fashion")
    x = data.x_test.reshape(len(data.x_test), -1).astype(np.float32)
    reference = keras.models.load_model(FLAGS.model)
    config = reference.get_config()
    variants = {}
    for name, policy, jit in (("fp32", "float32", False), ("xla", "float32", True), ("bf16", "mixed_bfloat16", False)):
        keras.mixed_precision.set_global_policy(policy)
        model = DCGMM(
            config["input_shape"],
            num_clusters=config["num_clusters"],
            latent_dim=config["latent_dim"],
            likelihood=config["likelihood"],
            kl_estimator=config["kl_estimator"],
            seed=0,
        )
        model.set_weights(reference.get_weights())
        model.compile(jit_compile=jit)
        probabilities = model.predict(x, batch_size=1000, verbose=0)
        model.seed_generator.state.assign(np.array([0, 0]))
        terms = {k: float(v) for k, v in model.compute_loss_terms(x[:256]).items()}
        variants[name] = (probabilities, terms)
    keras.mixed_precision.set_global_policy("float32")
    base = variants["fp32"][0]
    result = {"machine": machine(), "model": FLAGS.model, "variants": {}}
    for name, (probabilities, terms) in variants.items():
        clusters = probabilities.argmax(-1)
        result["variants"][name] = {
            "acc": metrics.cluster_accuracy(data.y_test, clusters),
            "clusters_changed": float(np.mean(clusters != base.argmax(-1))),
            "max_probability_change": float(np.abs(probabilities - base).max()),
            "loss_terms": terms,
        }
    report(result, FLAGS.output)


if __name__ == "__main__":
    app.run(main)
