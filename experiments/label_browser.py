"""The labelling page driven by a real browser (headless Chromium through Selenium), answering from labels:
the simulated person of the browser test and of ``experiments.label_simulation``.

Needs Debian's ``chromium`` and ``chromium-driver`` (``scripts/setup.sh`` installs them where it can).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from experiments.local_workers import REPOSITORY, free_port


class LabelServer:
    """``python -m experiments.label`` with ``flags`` in a child process on a free port (its log in ``log``)."""

    def __init__(self, flags: Sequence[str], log: Path, python: str = sys.executable):
        self.flags, self.log, self.python = list(flags), Path(log), python
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 180) -> LabelServer:
        """Starts the server and waits until the page answers."""
        with open(self.log, "a") as log:
            self.process = subprocess.Popen(
                [self.python, "-m", "experiments.label", *self.flags, f"--port={self.port}"],
                cwd=REPOSITORY,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONPATH": str(REPOSITORY)},
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the label server exited with {self.process.returncode}: {self.log.read_text()}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/state", timeout=5):
                    return self
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.3)
        raise TimeoutError(f"the label server did not answer in {timeout} s: {self.log.read_text()}")

    def kill(self) -> None:
        """Kills the server at once (SIGKILL), as a crash would."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def chromium() -> webdriver.Chrome:
    """A headless Chromium driven by Debian's chromedriver."""
    binary = shutil.which("chromium")
    driver = shutil.which("chromedriver")
    if not (binary and driver):
        raise RuntimeError("Chromium is missing: apt-get install chromium chromium-driver (scripts/setup.sh does)")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1100,1400"):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service(driver), options=options)


class LabellingPage:
    """The page in ``browser``, answered from ``labels`` (the training labels of the session's data)."""

    def __init__(self, browser: webdriver.Chrome, labels: np.ndarray, timeout: float = 60):
        self.browser, self.labels, self.timeout = browser, np.asarray(labels), timeout

    def open(self, url: str) -> None:
        self.browser.get(url)
        self.wait(lambda: self.pair_element.get_attribute("data-answered") not in (None, ""))

    def wait(self, condition, timeout: float | None = None) -> None:
        WebDriverWait(self.browser, timeout or self.timeout, poll_frequency=0.05).until(lambda _: condition())

    @property
    def pair_element(self):
        return self.browser.find_element(By.ID, "pair")

    @property
    def answered(self) -> int:
        return int(self.pair_element.get_attribute("data-answered"))

    @property
    def pair(self) -> tuple[int, int] | None:
        i, j = (self.pair_element.get_attribute(name) for name in ("data-i", "data-j"))
        return (int(i), int(j)) if i and j else None

    def press(self, key: str) -> None:
        self.browser.find_element(By.TAG_NAME, "body").send_keys(key)

    def answer(self, count: int) -> int:
        """Answers up to ``count`` pairs with the keyboard (J: same, K: different) from the labels; returns how many
        it answered (fewer when the page runs out of questions)."""
        for done in range(count):
            pair = self.pair
            if pair is None:
                return done
            before = self.answered
            self.press("j" if self.labels[pair[0]] == self.labels[pair[1]] else "k")
            self.wait(lambda before=before: self.answered == before + 1)
        return count

    def undo(self) -> None:
        before = self.answered
        self.press("u")
        self.wait(lambda: self.answered == before - 1)

    def retrain(self, timeout: float) -> None:
        """Presses Retrain and waits until the training is over (raises if it failed)."""
        rows = len(self.browser.find_elements(By.CSS_SELECTOR, "#scores tr"))
        self.browser.find_element(By.ID, "retrain").click()
        training = self.browser.find_element(By.ID, "training")
        grown = lambda: len(self.browser.find_elements(By.CSS_SELECTOR, "#scores tr")) > max(rows, 1)  # noqa: E731
        self.wait(lambda: training.get_attribute("data-phase") == "failed" or grown(), timeout)
        self.wait(lambda: training.get_attribute("data-phase") in ("idle", "failed"))
        if training.get_attribute("data-phase") == "failed":
            raise RuntimeError(training.text)
