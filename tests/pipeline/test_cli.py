"""The report CLI's behaviour that needs no Spark: arguments, the Java check, missing input."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from groupcoord.pipeline.cli import add_report_arguments, parse_time

ROOT = Path(__file__).resolve().parents[2]


def test_arguments() -> None:
    p = argparse.ArgumentParser()
    add_report_arguments(p)
    a = p.parse_args(
        ["--data-dir", "d", "--out", "r", "--since", "2025-11-22T10:00:00Z", "--until", "1763812000000"]
    )
    assert (a.data_dir, a.out, a.master) == ("d", Path("r"), None)
    assert a.since == 1763805600000 and a.until == 1763812000000


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("1763812000000", 1763812000000),
        ("2025-11-22T10:00:00Z", 1763805600000),
        ("2025-11-22T10:00:00", 1763805600000),
        ("2025-11-22T11:00:00+01:00", 1763805600000),
        ("2025-11-22", 1763769600000),
    ],
)
def test_parse_time(text: str, ms: int) -> None:
    assert parse_time(text) == ms


def test_parse_time_rejects_garbage() -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        parse_time("yesterday")


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pipeline", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_missing_java_is_a_message_not_a_trace(tmp_path: Path) -> None:
    (tmp_path / "journal").mkdir()
    (tmp_path / "journal" / "journal-1-000000.jsonl").write_text("")
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-such-jdk"), "PATH": "/usr/bin/nonexistent"}
    r = _run(["--data-dir", str(tmp_path), "--out", str(tmp_path / "out")], env)
    assert r.returncode == 2, r.stderr
    assert "apt-get install openjdk-17-jre-headless" in r.stderr and "JAVA_HOME" in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()


def test_missing_journal(tmp_path: Path) -> None:
    r = _run(["--data-dir", str(tmp_path), "--out", str(tmp_path / "out")], dict(os.environ))
    assert r.returncode == 1
    assert "no journal" in r.stderr and "Traceback" not in r.stderr


BLOCK_PYSPARK = """
import sys
from importlib.abc import MetaPathFinder


class BlockPyspark(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "pyspark" or name.startswith("pyspark."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, BlockPyspark())
from groupcoord.server.cli import main

sys.exit(main(sys.argv[1:]))
"""


def test_report_without_pyspark_says_to_install_the_report_extra(tmp_path: Path) -> None:
    """No ModuleNotFoundError traceback: one line naming the missing module and the extra to install."""
    journal = tmp_path / "data" / "journal"
    journal.mkdir(parents=True)
    (journal / "journal-00000000000000000000.jsonl").write_text("")
    argv = ["report", "--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "out")]
    proc = subprocess.run(
        [sys.executable, "-c", BLOCK_PYSPARK, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "pyspark" in proc.stderr and "pip install 'groupcoord[report]'" in proc.stderr
