"""Helpers shared by the benchmarks."""

from __future__ import annotations

import json
import os
import platform


def machine() -> dict:
    """CPU, core count, current load and library versions, recorded with every result."""
    import keras
    import tensorflow as tf

    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor())
    return {"cpu": cpu, "cores": os.cpu_count(), "load_1min": os.getloadavg()[0], "tensorflow": tf.__version__,
            "keras": keras.__version__, "python": platform.python_version()}


def report(result: dict, output: str | None) -> None:
    """Print ``result`` as JSON and, if ``output`` is given, append it to that file as one JSON line."""
    print(json.dumps(result, indent=1))
    if output:
        with open(output, "a") as f:
            f.write(json.dumps(result) + "\n")
