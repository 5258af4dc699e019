"""A real headless Chromium (Debian's `chromium` + `chromium-driver`) driven by Selenium, for the console tests.

Installed once with apt-get when missing and we run as root (as tests/integration/prometheus.py installs
Prometheus); the browser starts with the flags this sandboxed, offline machine needs: no sandbox (root), no
GPU, and no background networking (its connections would be refused here, many at a time).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.integration.apt import ensure_installed

PACKAGES = ("chromium", "chromium-driver")


def _binaries() -> tuple[str, str]:
    chromium, driver = ensure_installed(PACKAGES, ("chromium", "chromedriver"), skip_if_apt_fails=False)
    return chromium, driver


@contextmanager
def chromium(width: int = 1400, height: int = 1000) -> Iterator:
    """A Selenium WebDriver for a fresh headless Chromium with its own profile; quit on exit."""
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    binary, driver_path = _binaries()
    opts = webdriver.ChromeOptions()
    opts.binary_location = binary
    profile = tempfile.mkdtemp(prefix="groupcoord-chromium-")
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        f"--user-data-dir={profile}",
        f"--window-size={width},{height}",
    ):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the page's console, for console_errors()
    driver = webdriver.Chrome(service=Service(driver_path), options=opts)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def console_errors(driver: Any) -> list[str]:
    """The SEVERE entries of the browser's console since the last call (chromedriver's `browser` log: script
    errors, failed resource loads such as a 404 favicon, failed fetches), each as its message."""
    return [e["message"] for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
