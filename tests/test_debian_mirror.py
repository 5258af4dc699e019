"""docker/debian-mirror.sh: the Debian mirror `make image-base` gives debootstrap comes from the machine's
own apt configuration (one-line sources.list and deb822 .sources files) or GROUPCOORD_DEBIAN_MIRROR, never
from a host written in the script; with neither, a clear error. Runs the detection alone on sample configs
(no debootstrap, no docker)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "docker" / "debian-mirror.sh"

DEBIAN_SOURCES = """\
Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://mirror.lan/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.lan/debian-security
Suites: bookworm-security
Components: main
"""


def detect(
    apt: Path, os_release: str = 'ID=debian\nVERSION_CODENAME="bookworm"\n', **env: str
) -> subprocess.CompletedProcess[str]:
    (apt.parent / "os-release").write_text(os_release)
    clean = {k: v for k, v in os.environ.items() if k not in ("GROUPCOORD_DEBIAN_MIRROR", "DEBIAN_MIRROR")}
    clean.update(APT_DIR=str(apt), OS_RELEASE=str(apt.parent / "os-release"), **env)
    return subprocess.run(["sh", str(SCRIPT)], env=clean, capture_output=True, text=True, timeout=60)


@pytest.fixture
def apt(tmp_path: Path) -> Path:
    (tmp_path / "apt" / "sources.list.d").mkdir(parents=True)
    return tmp_path / "apt"


def mirror(apt: Path, **kw: str) -> str:
    done = detect(apt, **kw)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_deb822_sources_as_debian_12_ships_them(apt: Path) -> None:
    (apt / "sources.list.d" / "debian.sources").write_text(DEBIAN_SOURCES)
    assert mirror(apt) == "http://mirror.lan/debian"


def test_deb822_skips_disabled_stanzas_deb_src_and_other_suites(apt: Path) -> None:
    (apt / "sources.list.d" / "a-node.sources").write_text(
        "Types: deb\nURIs: https://deb.nodesource.com/node_20.x\nSuites: nodistro\nComponents: main\n"
    )
    (apt / "sources.list.d" / "b.sources").write_text(
        "Types: deb\nURIs: http://off.lan/debian\nSuites: trixie\nComponents: main\nEnabled: no\n\n"
        "Types: deb-src\nURIs: http://src.lan/debian\nSuites: trixie\nComponents: main\n\n"
        "types: deb deb-src\nuris:\n cdrom:[Debian]/\n  file:///srv/debian\nsuites: stable\n"
    )
    assert mirror(apt) == "file:///srv/debian"


def test_one_line_sources_list_with_options_and_security_first(apt: Path) -> None:
    (apt / "sources.list").write_text(
        "# deb http://commented.lan/debian bookworm main\n"
        "deb http://security.lan/debian-security bookworm-security main\n"
        "deb-src http://src.lan/debian bookworm main\n"
        "deb [ arch=amd64 signed-by=/k.gpg ] https://packages.cloud.google.com/apt cloud-sdk-bookworm main\n"
        "deb [arch=amd64] http://one.lan/debian bookworm main contrib\n"
    )
    (apt / "sources.list.d" / "later.sources").write_text(DEBIAN_SOURCES)
    assert mirror(apt) == "http://one.lan/debian"


def test_list_files_in_sources_list_d_and_the_hosts_own_codename(apt: Path) -> None:
    (apt / "sources.list").write_text("# nothing here\n")
    (apt / "sources.list.d" / "z.list.disabled").write_text("deb http://ignored.lan/debian bookworm main\n")
    (apt / "sources.list.d" / "debian.list").write_text("deb http://next.lan/debian futurename main\n")
    assert detect(apt).returncode == 1  # an unknown suite on a bookworm host is not Debian's
    assert mirror(apt, os_release="ID=debian\nVERSION_CODENAME=futurename\n") == "http://next.lan/debian"


def test_the_variable_wins(apt: Path) -> None:
    (apt / "sources.list.d" / "debian.sources").write_text(DEBIAN_SOURCES)
    assert mirror(apt, GROUPCOORD_DEBIAN_MIRROR="http://chosen.lan/debian") == "http://chosen.lan/debian"


@pytest.mark.parametrize(
    "sources_list",
    [
        "",  # no apt configuration at all
        "deb http://archive.ubuntu.com/ubuntu jammy main restricted\n",  # an Ubuntu host
    ],
)
def test_no_debian_mirror_is_a_clear_error(apt: Path, sources_list: str) -> None:
    (apt / "sources.list").write_text(sources_list)
    done = detect(apt, os_release="ID=ubuntu\nVERSION_CODENAME=jammy\n")
    assert done.returncode == 1 and done.stdout == ""
    assert "no Debian mirror found" in done.stderr and "GROUPCOORD_DEBIAN_MIRROR" in done.stderr
