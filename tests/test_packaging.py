"""What `pip install groupcoord` puts in site-packages: the `groupcoord` namespace and nothing else.

The card's top-level folders (`protocol/`, `server/`, `assignors/`, `pipeline/`) are mapped onto
`groupcoord.*` by `package-dir` in pyproject.toml. Installing them under their own names would clash with
the PyPI packages called `protocol` and `pipeline`, so the wheel is built here and its file list checked.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ROOMS = {"protocol", "server", "assignors", "pipeline"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (whl,) = out.glob("groupcoord-*.whl")
    return zipfile.ZipFile(whl)


@pytest.fixture(scope="module")
def wheel_names(wheel: zipfile.ZipFile) -> list[str]:
    return wheel.namelist()


def test_wheel_installs_only_the_groupcoord_top_level_package(wheel_names: list[str]) -> None:
    tops = {
        n.split("/", 1)[0] for n in wheel_names if not n.split("/", 1)[0].endswith((".dist-info", ".data"))
    }
    assert tops == {"groupcoord"}


def test_wheel_has_every_package_folder_of_the_rooms(wheel_names: list[str]) -> None:
    """A folder with an `__init__.py` missing from pyproject's package list would be left out of the wheel."""
    on_disk = {
        "groupcoord/" + str(p.relative_to(ROOT))
        for room in ROOMS
        for p in (ROOT / room).rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert on_disk - set(wheel_names) == set()


def test_console_script_points_into_the_namespace(wheel: zipfile.ZipFile) -> None:
    (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
    assert "groupcoord = groupcoord.server.cli:main" in wheel.read(name).decode()


def test_the_dockerfile_copies_every_top_level_package_folder() -> None:
    """The image installs with `pip install .` from what the Dockerfile copied: a folder pyproject maps onto
    `groupcoord.*` but the Dockerfile leaves out fails the image build ("package directory ... does not
    exist"), which only `make test-compose` would show."""
    import re
    import tomllib

    dirs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"].values()
    top = {d.split("/")[0] for d in dirs}
    copied = set(re.findall(r"^COPY (\S+) \./\1$", (ROOT / "Dockerfile").read_text(), re.M))
    assert top <= copied, f"Dockerfile does not COPY {sorted(top - copied)}"
