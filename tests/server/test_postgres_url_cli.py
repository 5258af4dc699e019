"""A malformed `postgresql://` URL for `--storage` or `--cluster` (issue 30): `groupcoord serve` as a real
subprocess prints one clear line on stderr (password redacted) and exits 1, never a traceback. asyncpg would
only parse the URL at the first connect and raise a bare ValueError there; `server.storage.pg_url` checks it
at start."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from groupcoord.server.storage.pg_url import url_problem

ROOT = Path(__file__).resolve().parents[2]
MALFORMED = [
    ("--storage", "postgresql://app:hunter2@db.example:notaport/coord", "port 'notaport'"),
    ("--storage", "postgresql://app@db.example:99999/coord", "port '99999'"),
    ("--storage", "postgresql://app@:5432/coord", "no host"),
    ("--storage", "postgresql:///coord", "no host"),
    ("--storage", "postgresql://[::1/coord", "not a valid URL"),
    ("--storage", "postgres://h1:5432,h2:x/coord", "port 'x'"),
    ("--storage", "postgresql://db.example/coord?port=abc", "port 'abc'"),
    ("--cluster", "postgresql://app:hunter2@db.example:5x32/coord", "port '5x32'"),
    ("--cluster", "postgresql://", "no host"),
]


@pytest.mark.parametrize(("flag", "url", "said"), MALFORMED)
def test_a_malformed_url_is_one_line_and_exit_1(tmp_path: Path, flag: str, url: str, said: str) -> None:
    cmd = [
        sys.executable,
        "-m",
        "groupcoord.server",
        "serve",
        "--port",
        "0",
        "--data-dir",
        str(tmp_path),
        flag,
        url,
    ]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"groupcoord: {flag} ") and said in lines[0], lines[0]
    assert "hunter2" not in lines[0]


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://app:p%40ss@db.example:5432/coord",
        "postgres://db.example/coord",
        "postgresql://app@[::1]:5432/coord?sslmode=disable",
        "postgresql://h1:5432,h2:5433/coord",
        "postgresql:///coord?host=/var/run/postgresql",
    ],
)
def test_well_formed_urls_pass_the_check(url: str) -> None:
    assert url_problem(url) is None
