"""The journal under a real write failure: a child process whose file-size limit (RLIMIT_FSIZE) makes the
kernel refuse writes with EFBIG, as a full disk refuses them with ENOSPC (issue 11). A failure must be
logged once with its context, drop only its batch, and never surface as an unretrieved future."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

CHILD = textwrap.dedent(
    """
    import asyncio, json, resource, signal, sys
    from pathlib import Path

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a signal
    limit = int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    from groupcoord.server.journal.writer import Journal

    async def main():
        j = Journal(Path(sys.argv[1]), interval=0.005)
        j.open(0)
        for i in range(300):
            j.append({"ts": i, "group": "g", "event": "member_joined", "member_id": "m" * 40})
            await asyncio.sleep(0.001)
        await asyncio.sleep(0.05)
        await j.close()
        print("RESULT " + json.dumps({"written": j.lines_written, "dropped": j.lines_dropped}))

    asyncio.run(main())
    """
)


def run_child(directory: Path, limit: int) -> tuple[dict, str]:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(directory), str(limit)], capture_output=True, text=True, timeout=60
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    result = json.loads(next(line for line in out.splitlines() if line.startswith("RESULT "))[7:])
    return result, out


def test_a_journal_that_can_write_nothing_logs_once_and_drops_every_line(tmp_path: Path) -> None:
    result, out = run_child(tmp_path / "journal", 0)
    assert result == {"written": 0, "dropped": 300}
    assert out.count("journal write failed") == 1, out
    assert "File too large" in out  # the error is in the one log line
    assert "never retrieved" not in out and "Traceback" not in out, out


def test_a_journal_that_fails_now_and_then_recovers_in_a_fresh_file(tmp_path: Path) -> None:
    result, out = run_child(tmp_path / "journal", 4096)
    assert result["written"] > 0 and result["dropped"] > 0
    assert result["written"] + result["dropped"] == 300
    assert "journal writes succeed again" in out, out
    assert "never retrieved" not in out and "Traceback" not in out, out
    files = sorted((tmp_path / "journal").glob("*.jsonl"))
    assert len(files) > 1, "a failed file was written to again instead of starting a fresh one"
    whole = [line for f in files for line in f.read_text().splitlines()]
    parsed = []
    for line in whole:
        try:
            parsed.append(json.loads(line))
        except ValueError:
            continue  # the tail cut by the failed write
    assert len(parsed) == result["written"]
    seqs = [e["seq"] for e in parsed]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
