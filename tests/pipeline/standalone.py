"""A real Spark standalone cluster on loopback: one master and one worker from the installed pyspark.

pyspark's wheel carries `bin/spark-class` (not `sbin/start-master.sh`, which daemonises and writes pid files
under $SPARK_HOME), so the master and the worker are started in the foreground with `spark-class` as our own
child processes: their pids are ours to stop, their logs go to the test's directory, and nothing is left
behind in the virtual environment.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from pathlib import Path

import pyspark

from groupcoord.testing.ports import free_port

SPARK_HOME = Path(pyspark.__file__).parent
HOST = "127.0.0.1"


class StandaloneCluster:
    """`spark://127.0.0.1:<port>` with one worker (1 core, small memory); `stop()` ends both processes."""

    def __init__(self, work_dir: Path, worker_cores: int = 1, worker_memory: str = "1g") -> None:
        self.work_dir = work_dir
        self.port = free_port()
        self.ui_port = free_port()
        self.worker_cores = worker_cores
        self.worker_memory = worker_memory
        self.procs: list[subprocess.Popen[bytes]] = []

    @property
    def url(self) -> str:
        return f"spark://{HOST}:{self.port}"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            SPARK_HOME=str(SPARK_HOME),
            SPARK_LOCAL_IP=HOST,
            SPARK_LOG_DIR=str(self.work_dir / "logs"),
            SPARK_WORKER_DIR=str(self.work_dir / "work"),
            SPARK_DAEMON_MEMORY="256m",
        )
        return env

    def _spawn(self, name: str, *args: str) -> None:
        log = (self.work_dir / f"{name}.log").open("wb")
        self.procs.append(
            subprocess.Popen(
                [str(SPARK_HOME / "bin" / "spark-class"), *args],
                env=self.env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        )

    def log(self, name: str) -> str:
        p = self.work_dir / f"{name}.log"
        return p.read_text(errors="replace")[-4000:] if p.exists() else ""

    def alive_workers(self) -> int:
        """Workers the master reports ALIVE (its web UI's JSON view, on loopback)."""
        try:
            with urllib.request.urlopen(f"http://{HOST}:{self.ui_port}/json/", timeout=2) as r:
                state = json.load(r)
        except OSError:
            return 0
        return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")

    def start(self, timeout: float = 90.0) -> StandaloneCluster:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self._spawn(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host",
            HOST,
            "--port",
            str(self.port),
            "--webui-port",
            str(self.ui_port),
        )
        self._spawn(
            "worker",
            "org.apache.spark.deploy.worker.Worker",
            "--host",
            HOST,
            "--webui-port",
            str(free_port()),
            "--cores",
            str(self.worker_cores),
            "--memory",
            self.worker_memory,
            "--work-dir",
            str(self.work_dir / "work"),
            self.url,
        )
        deadline = time.monotonic() + timeout
        while self.alive_workers() < 1:
            for p, name in zip(self.procs, ("master", "worker"), strict=True):
                if p.poll() is not None:
                    self.stop()
                    raise RuntimeError(f"spark {name} exited ({p.returncode}):\n{self.log(name)}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"no worker registered in {timeout}s:\n{self.log('master')}\n{self.log('worker')}"
                )
            time.sleep(0.5)
        return self

    def stop(self) -> None:
        for p in reversed(self.procs):  # worker first: the master then sees it go
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
        self.procs.clear()
