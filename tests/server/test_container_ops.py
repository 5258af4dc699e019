"""What the container image relies on: `groupcoord probe` (its HEALTHCHECK) says ready only when the state
is loaded and ApiVersions is answered, `--log-format json` writes nothing but JSON lines from start to stop,
and `groupcoord report` without the report extra says how to get it instead of a traceback."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT, free_port

pytestmark = [pytest.mark.integration, pytest.mark.owns_server]


def probe(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "groupcoord.server", "probe", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=30,
    )  # fmt: skip


def test_probe_is_ready_against_a_loaded_server_and_not_ready_without_one(server_factory) -> None:
    metrics = free_port()
    server = server_factory("--metrics-port", str(metrics))
    ready = probe("--port", str(server.port), "--metrics-port", str(metrics))
    assert (ready.returncode, ready.stdout.strip()) == (0, "ready"), ready.stderr
    server.stop()
    down = probe("--port", str(server.port), "--metrics-port", str(metrics), "--timeout", "1")
    assert down.returncode == 1 and down.stderr.startswith("not ready:"), down.stderr
    # a TCP listener that is not a Kafka broker is not "ready" either
    other = probe("--port", str(free_port()), "--timeout", "1")
    assert other.returncode == 1


def test_json_log_format_writes_only_json_lines_from_start_to_stop(server_factory) -> None:
    server = server_factory("--log-format", "json", "--metrics-port", str(free_port()))
    server.stop()
    lines = server.log_path.read_text().splitlines()
    events = [json.loads(line) for line in lines]  # raises on any plain line
    assert events[0]["event"] == "started" and events[-1]["event"] == "stopped"
    assert all({"event", "level", "timestamp"} <= set(e) for e in events)


def test_report_without_its_extra_says_how_to_get_it() -> None:
    code = (
        "import sys; sys.modules['pyspark'] = None; sys.modules['matplotlib'] = None\n"
        "from groupcoord.server.cli import main; sys.exit(main(['report', '--data-dir', 'x', '--out', 'y']))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 3
    assert "pip install 'groupcoord[report]'" in done.stderr and "docker cp" in done.stderr
    assert "Traceback" not in done.stderr
