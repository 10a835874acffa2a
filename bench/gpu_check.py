r"""The GPU check: one unattended command that measures what docs/performance.md needs from a GPU machine.

    python -m bench.gpu_check                      # about 10 minutes on one GPU; results in bench/results/gpu/
    python -m bench.gpu_check --smoke              # the same steps shortened (seconds to minutes), e.g. on a CPU

Steps, each in its own process, each writing under ``--results_dir``:

1. ``card.json``: the cards TensorFlow sees (names from the driver), or ``"gpus": []`` and "no GPU";
2. ``bench.device_check`` (placement, fp16, XLA, step and epoch time) -> ``device_check.jsonl``;
3. ``bench.pipeline_rate`` (batches per second of the input pipeline) -> ``pipeline_rate.jsonl``;
4. one default Fashion-MNIST run (pretraining and 100 epochs, seed 0) twice: float32 without XLA, and fp16 mixed
   precision with XLA (``--jit_compile --nodeterministic``) -> ``fashion_fp32/``, ``fashion_fp16_xla/`` (rows with
   ``train_seconds``) and their wall seconds in ``summary.json``;
5. ``bench.scale`` at N = 10^6 -> ``scale.jsonl``.

``summary.json`` collects the card, each step's exit code and wall seconds. Without a GPU the check says so in it
and on stderr, and goes on (on the CPU, use ``--smoke``: the full check would take hours).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_string("results_dir", "bench/results/gpu", "Folder of the results.")
flags.DEFINE_bool("smoke", False, "A shortened check (tiny sizes): that the steps run, not their numbers.")
flags.DEFINE_string("fashion_dir", None, "Folder with the Fashion-MNIST files (default: the usual search path).")
flags.DEFINE_list("only", None, "Only these steps (default: all; see STEPS).")

STEPS = ("device_check", "pipeline_rate", "fashion_fp32", "fashion_fp16_xla", "scale")

FULL = {
    "device_check": ["--epoch_samples=60000", "--timed_steps=200"],
    "pipeline_rate": ["--epochs=3"],
    "run": ["--epochs=100"],
    "scale": ["--sizes=1000000", "--epochs=3"],
}
SMOKE = {
    "device_check": ["--epoch_samples=512", "--timed_steps=2"],
    "pipeline_rate": ["--num_samples=2000", "--num_pairs=200", "--epochs=1"],
    "run": ["--epochs=1", "--pretrain_epochs=1", "--max_train_samples=1000", "--max_test_samples=200"],
    "scale": ["--sizes=2000", "--epochs=1"],
}


def cards() -> list[str]:
    """The names of the GPUs TensorFlow sees (empty without one)."""
    import tensorflow as tf

    return [
        tf.config.experimental.get_device_details(gpu).get("device_name", gpu.name)
        for gpu in tf.config.list_physical_devices("GPU")
    ]


def gpu_check(output_dir: str | Path, smoke: bool, data_dir: str | None = None, only: list[str] | None = None) -> dict:
    """Runs the steps of the module docstring (those in ``only``, default all) into ``output_dir``; returns (and
    writes) ``summary.json``."""
    unknown = set(only or ()) - set(STEPS)
    if unknown:
        raise ValueError(f"unknown steps {sorted(unknown)}; the steps are {STEPS}")
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    found = cards()
    summary = {"gpus": found, "smoke": smoke, "steps": {}}
    (output_dir / "card.json").write_text(json.dumps({"gpus": found}) + "\n")
    if not found:
        print("no GPU: TensorFlow sees none; the steps run on the CPU", file=sys.stderr, flush=True)
    sizes = SMOKE if smoke else FULL
    data = [f"--data_dir={data_dir}"] if data_dir else []
    run = ["-m", "experiments.run", "--dataset=fashion", "--num_constraints=6000", "--seed=0", "--verbose=0", *data]
    steps = {
        "device_check": [
            "-m",
            "bench.device_check",
            *sizes["device_check"],
            f"--output={output_dir}/device_check.jsonl",
        ],
        "pipeline_rate": [
            "-m",
            "bench.pipeline_rate",
            *sizes["pipeline_rate"],
            f"--output={output_dir}/pipeline_rate.jsonl",
        ],
        "fashion_fp32": [*run, *sizes["run"], f"--output_dir={output_dir}/fashion_fp32"],
        "fashion_fp16_xla": [
            *run,
            *sizes["run"],
            "--mixed_precision=fp16",
            "--jit_compile",
            "--nodeterministic",
            f"--output_dir={output_dir}/fashion_fp16_xla",
        ],
        "scale": ["-m", "bench.scale", *sizes["scale"], f"--output={output_dir}/scale.jsonl"],
    }
    for name, arguments in steps.items():
        if only and name not in only:
            continue
        clock = time.perf_counter()
        with open(output_dir / f"{name}.log", "w") as log:
            code = subprocess.run([sys.executable, *arguments], stdout=log, stderr=subprocess.STDOUT).returncode
        summary["steps"][name] = {"exit_code": code, "seconds": round(time.perf_counter() - clock, 1)}
        print(f"{name}: exit {code} in {summary['steps'][name]['seconds']} s", file=sys.stderr, flush=True)
        (output_dir / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def main(argv):
    del argv
    summary = gpu_check(FLAGS.results_dir, FLAGS.smoke, FLAGS.fashion_dir, FLAGS.only)
    sys.exit(max((step["exit_code"] for step in summary["steps"].values()), default=0))


if __name__ == "__main__":
    app.run(main)
