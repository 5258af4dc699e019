"""A real Prometheus server (Debian's `prometheus` package) scraping targets on loopback, for tests.

Installed once with apt-get when the binary is missing and we run as root; never the Debian service: the
binary runs with its own config and data directory on a free loopback port, scraping every second.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.integration.apt import ensure_installed


def prometheus_binary() -> str:
    (found,) = ensure_installed(("prometheus",), ("prometheus",), skip_if_apt_fails=True, timeout=600)
    return found


def promtool_binary() -> str:
    """promtool ships in the same Debian package as prometheus: install that one when it is missing."""
    found = shutil.which("promtool")
    if found:
        return found
    prometheus_binary()
    found = shutil.which("promtool")
    if not found:
        pytest.fail("the prometheus package is installed but promtool is not on PATH")
    return found


class Prometheus:
    def __init__(self, workdir: Path, targets: list[str]) -> None:
        self.port = free_port()
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        config = workdir / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n  - job_name: groupcoord\n    static_configs:\n"
            f"      - targets: {json.dumps(targets)}\n"
        )
        self.log_path = workdir / "prometheus.log"
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child
        self.proc = subprocess.Popen(
            [
                prometheus_binary(),
                f"--config.file={config}",
                f"--storage.tsdb.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
            ],
            stdout=log,
            stderr=log,
        )
        log.close()

    def query(self, expr: str) -> list[dict]:
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(url, timeout=5) as resp:
            body = json.load(resp)
        assert body["status"] == "success", body
        return body["data"]["result"]

    def wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited:\n{self.log_path.read_text()[-4000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=1) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError("prometheus did not become ready")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
