"""What `pip install .` installs, and why each dependency is there."""

import runpy
from pathlib import Path

import setuptools

REPO = Path(__file__).resolve().parents[1]


def test_install_holds_the_library_only(monkeypatch):
    captured = {}
    monkeypatch.setattr(setuptools, "setup", lambda **kwargs: captured.update(kwargs))
    monkeypatch.chdir(REPO)
    runpy.run_path(str(REPO / "setup.py"), run_name="__main__")
    packages = set(captured["packages"])
    assert all(p == "dcgmm_tf" or p.startswith("dcgmm_tf.") for p in packages), packages  # no `experiments`
    assert {"dcgmm_tf", "dcgmm_tf.data", "dcgmm_tf.constraints", "dcgmm_tf.baselines"} <= packages
    assert "tensorflow-probability==0.25.0" in captured["install_requires"]
    assert not any("#" in r for r in captured["install_requires"])


def test_every_dependency_says_why_it_is_there():
    lines = [line for line in (REPO / "requirements.txt").read_text().splitlines() if line and not line[0] == "#"]
    assert lines and all(len(line.split("  # ")) == 2 and line.split("  # ")[1].strip() for line in lines), lines
