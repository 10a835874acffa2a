r"""Several workers of ``experiments.run`` on this machine: MultiWorkerMirroredStrategy over 127.0.0.1, to try the
multi-machine path (docs/distributed.md) before using real machines.

    python -m experiments.local_workers --workers=2 --output_dir=results/two_workers -- \
        --dataset=fashion --batch_size=512 --cache_dir=data/cache

Worker k gets ``TF_CONFIG`` with free local ports, ``--strategy=multiworker`` and
``--output_dir=<output_dir>/worker<k>`` (its log beside it in ``worker<k>.log``); the flags after ``--`` go to every
worker. Fill ``--cache_dir`` first (a
one-worker run with the same flags and ``--epochs=1``) so that every worker loads the same pretraining.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from absl import app, flags

REPOSITORY = Path(__file__).resolve().parents[1]

FLAGS = flags.FLAGS
flags.DEFINE_integer("workers", 2, "Number of worker processes.", lower_bound=1)
flags.DEFINE_float("worker_timeout", 3600, "Seconds the workers may take.", lower_bound=1)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cluster_configs(num_workers: int) -> list[str]:
    """The ``TF_CONFIG`` of each of ``num_workers`` workers on free local ports (worker 0 is the chief)."""
    workers = [f"127.0.0.1:{free_port()}" for _ in range(num_workers)]
    return [
        json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": k}}) for k in range(num_workers)
    ]


def start_local_workers(
    num_workers: int, run_flags: Sequence[str], output_dir: str | os.PathLike
) -> list[subprocess.Popen]:
    """Starts ``num_workers`` workers of ``experiments.run`` with ``run_flags`` on free local ports and returns
    their processes (worker k writes to ``<output_dir>/worker<k>``, its log to ``<output_dir>/worker<k>.log``)."""
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    processes = []
    for k, tf_config in enumerate(cluster_configs(num_workers)):
        with open(output_dir / f"worker{k}.log", "a") as log:
            command = [
                sys.executable,
                "-m",
                "experiments.run",
                *run_flags,
                "--strategy=multiworker",
                f"--output_dir={output_dir / f'worker{k}'}",
            ]
            env = {**os.environ, "TF_CONFIG": tf_config, "PYTHONPATH": str(REPOSITORY)}
            processes.append(subprocess.Popen(command, cwd=REPOSITORY, stdout=log, stderr=subprocess.STDOUT, env=env))
    return processes


def run_local_workers(
    num_workers: int, run_flags: Sequence[str], output_dir: str | os.PathLike, timeout: float = 3600
) -> list[int]:
    """Runs ``num_workers`` workers of ``experiments.run`` with ``run_flags`` until all end (see
    :func:`start_local_workers`); returns their exit codes (a worker still running at ``timeout`` is killed, with
    code -9)."""
    processes = start_local_workers(num_workers, run_flags, output_dir)
    codes = []
    for process in processes:
        try:
            codes.append(process.wait(timeout=timeout))
        except subprocess.TimeoutExpired:
            for other in processes:
                other.kill()
            codes.append(-9)
    return codes


def main(argv):
    codes = run_local_workers(FLAGS.workers, argv[1:], FLAGS.output_dir, FLAGS.worker_timeout)
    print(f"exit codes of the workers: {codes} (logs in {FLAGS.output_dir}/worker<k>.log)", file=sys.stderr)
    sys.exit(max(abs(c) for c in codes))


if __name__ == "__main__":
    from experiments import run  # noqa: F401 (--output_dir, here the folder of the workers' folders)

    FLAGS.set_default("output_dir", "results/local_workers")
    app.run(main)
