"""docs/examples/aiokafka_consumer_protocol.py runs as the docs say, against groupcoord."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration]

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "aiokafka_consumer_protocol.py"


def test_the_example_produces_and_consumes(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory("--topic", "orders:3")

    def run(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, str(EXAMPLE), *args, "--bootstrap", srv.bootstrap],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "produced 30" in run("produce", "--count", "30")
    out = run("consume", "--count", "30", "--assignor", "uniform")
    assert "assigned [0, 1, 2] epoch=" in out
    assert sorted(line.split()[1] for line in out.splitlines() if ":" in line.split()[0]) == sorted(
        f"order-{i}" for i in range(30)
    )
