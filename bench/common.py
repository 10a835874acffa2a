"""Helpers shared by the benchmarks."""

from __future__ import annotations

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
