"""mypy over the packages pyproject's [tool.mypy] lists (strict on protocol/ and server/coordinator/), so
`make test` fails on a type error there as `make typecheck` does. Skipped only where mypy is not installed
(the compose clients image).

mypy finds `groupcoord.*` through a link tree built here from [tool.setuptools.package-dir] (what `make
setup` puts in .venv/src), so the test does not depend on where the venv lives."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed")
def test_mypy_is_clean(tmp_path: Path) -> None:
    package_dir = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    links = tmp_path / "src" / "groupcoord"
    links.mkdir(parents=True)
    for name, folder in package_dir.items():
        (links / name.removeprefix("groupcoord.")).symlink_to(ROOT / folder, target_is_directory=True)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache")],
        cwd=ROOT,
        env=dict(os.environ, MYPYPATH=str(tmp_path / "src")),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success" in done.stdout
