"""Debian packages a test needs (Prometheus, Chromium), installed with apt-get on first use when we run as root.

One install at a time on the machine: tests run in parallel (pytest-xdist workers, or several runs), and two
`apt-get` processes at once fail on dpkg's lock. An exclusive `flock` on a file in the temp directory orders
them; whoever gets it second finds the binaries installed and returns at once.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

LOCK = Path(tempfile.gettempdir()) / "groupcoord-tests-apt.lock"


def ensure_installed(
    packages: tuple[str, ...], binaries: tuple[str, ...], *, skip_if_apt_fails: bool, timeout: float = 900
) -> list[str]:
    """The paths of `binaries`, installing `packages` first when one is missing. Skips when they are missing
    and we are not root; when apt-get cannot install them, skips or fails as the caller says."""
    found = [shutil.which(b) for b in binaries]
    if all(found):
        return [f for f in found if f]
    if os.geteuid() != 0:
        pytest.skip(f"{', '.join(packages)} not installed and installing needs root")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    with open(LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not all(shutil.which(b) for b in binaries):  # another worker may have installed them meanwhile
                for cmd in (
                    ["apt-get", "update", "-qq"],
                    ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages],
                ):
                    try:
                        subprocess.run(
                            cmd,
                            check=True,
                            env=env,
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL,
                            timeout=timeout,
                        )
                    except (OSError, subprocess.SubprocessError) as exc:
                        if not skip_if_apt_fails:
                            raise
                        pytest.skip(
                            f"{', '.join(packages)} not installed and `{' '.join(cmd)}` failed: {exc}"
                        )
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    found = [shutil.which(b) for b in binaries]
    if not all(found):
        pytest.fail(f"apt-get installed {', '.join(packages)} but {', '.join(binaries)} are not all on PATH")
    return [f for f in found if f]
