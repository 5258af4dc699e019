"""The roll of closed JSONL journal files into Parquet segments (server/journal_roll.py, docs/journal.md)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from groupcoord.server.journal.roll import (  # noqa: E402
    VERSION_KEY,
    JournalRoller,
    arrow_schema,
    read_segment,
    recover,
    roll_file,
)
from groupcoord.server.journal.writer import FIELDS, JOURNAL_VERSION  # noqa: E402


def _event(seq: int, **fields: Any) -> dict[str, Any]:
    e: dict[str, Any] = dict.fromkeys(FIELDS)
    e.update(v=JOURNAL_VERSION, ts=1_763_812_000_000 + seq, seq=seq, group="g", event="member_joined")
    e.update(generation=seq // 3, members=1, protocol_type="consumer", protocol="range")
    e.update(fields)
    return e


def _events() -> list[dict[str, Any]]:
    """Every column kind: nulls, a bool, a decoded assignment, lag offsets with a null log end."""
    return [
        _event(1, event="group_created"),
        _event(2, member_id="m-1", client_id="c", group_instance_id="i-1"),
        _event(3, event="static_rejoin", member_id="m-2", previous_member_id="m-1", skip_assignment=True),
        _event(
            4,
            event="state_change",
            state_from="CompletingRebalance",
            state_to="Stable",
            reason="sync_complete",
            leader="m-2",
            assignment={"m-2": ["t-0", "t-1"], "m-3": []},
        ),
        _event(
            5,
            event="lag_snapshot",
            offsets={"t-0": {"committed": 5, "log_end": 9}, "u-0": {"committed": 1, "log_end": None}},
        ),
        _event(6, event="member_removed", member_id="m-2", reason="left", skip_assignment=False),
    ]


def _write(path: Path, events: list[dict[str, Any]], tail: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in events) + tail)
    return path


def test_segment_schema_is_the_pipeline_schema_field_by_field() -> None:
    pytest.importorskip("pyspark")
    from pyspark.sql.pandas.types import to_arrow_schema

    from groupcoord.pipeline.schema import JOURNAL_SCHEMA

    expected = to_arrow_schema(JOURNAL_SCHEMA)
    ours = arrow_schema()
    assert ours.names == expected.names == list(FIELDS)
    for field in expected:
        assert ours.field(field.name).type.equals(field.type), field.name


def test_roll_writes_every_event_with_the_version_and_deletes_the_jsonl(tmp_path: Path) -> None:
    src = _write(tmp_path / "journal" / "journal-1-00000.jsonl", _events())
    result = roll_file(src)
    dst = tmp_path / "journal" / "journal-1-00000.parquet"
    assert (result.events, result.skipped, result.target) == (6, 0, str(dst))
    assert not src.exists() and dst.exists() and not list(dst.parent.glob("*.tmp"))
    meta = pq.read_metadata(dst)
    assert meta.metadata[VERSION_KEY.encode()] == str(JOURNAL_VERSION).encode()
    assert list(read_segment(dst)) == _events()


def test_lines_without_v_are_version_1_in_the_segment(tmp_path: Path) -> None:
    old = [{k: v for k, v in e.items() if k != "v"} for e in _events()]
    dst = Path(roll_file(_write(tmp_path / "journal-1-00000.jsonl", old)).target)
    assert pq.read_table(dst, columns=["v"]).column("v").to_pylist() == [1] * len(old)


def test_a_torn_last_line_is_skipped_and_counted(tmp_path: Path) -> None:
    src = _write(tmp_path / "journal-1-00000.jsonl", _events(), tail='{"v":2,"ts":17638120')
    result = roll_file(src)
    assert (result.events, result.skipped) == (6, 1)
    assert list(read_segment(Path(result.target))) == _events()


def test_an_undecodable_line_inside_the_file_is_skipped_and_counted(tmp_path: Path) -> None:
    lines = [json.dumps(e) for e in _events()]
    lines.insert(2, "\x00\x00\x00garbage")
    src = tmp_path / "journal-1-00000.jsonl"
    src.write_text("\n".join(lines) + "\n")
    result = roll_file(src)
    assert (result.events, result.skipped) == (6, 1)
    assert list(read_segment(Path(result.target))) == _events()


def test_a_failed_roll_leaves_the_jsonl_and_no_segment(tmp_path: Path) -> None:
    src = _write(tmp_path / "journal-1-00000.jsonl", [*_events(), _event(7, ts="not a number")])
    before = src.read_bytes()
    with pytest.raises((pa.ArrowInvalid, pa.ArrowTypeError, TypeError)):
        roll_file(src)
    assert src.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [src.name]


def test_start_up_deletes_rolled_twins_and_temp_files_and_returns_older_processes_files(
    tmp_path: Path,
) -> None:
    d = tmp_path / "journal"
    twin = _write(d / "journal-100-00000.jsonl", _events())
    (d / "journal-100-00000.parquet").write_bytes(b"segment")  # a crash between rename and delete
    (d / "journal-100-00001.parquet.tmp").write_bytes(b"half")
    closed = _write(d / "journal-100-00001.jsonl", _events())
    older = _write(d / "journal-50-00003.jsonl", _events())
    own = _write(d / "journal-200-00000.jsonl", _events())
    assert recover(d, current_start_ms=200) == [older, closed]
    assert not twin.exists() and not (d / "journal-100-00001.parquet.tmp").exists()
    assert own.exists() and closed.exists() and older.exists()


def test_the_server_roller_rolls_in_its_worker_and_keeps_a_file_it_cannot_roll(tmp_path: Path) -> None:
    good = _write(tmp_path / "journal-1-00000.jsonl", _events())
    bad = _write(tmp_path / "journal-1-00001.jsonl", [_event(1, generation="x")])
    roller = JournalRoller(tmp_path)
    try:
        roller.submit(good)
        roller.submit(bad)
        deadline = time.monotonic() + 60
        while roller.rolled + roller.failed < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        roller.close()
    assert (roller.rolled, roller.failed) == (1, 1)
    assert not good.exists() and (tmp_path / "journal-1-00000.parquet").exists()
    assert bad.exists() and not (tmp_path / "journal-1-00001.parquet").exists()


def test_journal_cat_prints_the_events_of_parquet_and_jsonl_segments_in_file_order(tmp_path: Path) -> None:
    d = tmp_path / "data" / "journal"
    first = [_event(i) for i in range(1, 4)]
    roll_file(_write(d / "journal-100-00000.jsonl", _events()))
    _write(d / "journal-100-00001.jsonl", first)
    r = subprocess.run(
        [sys.executable, "-m", "groupcoord.server", "journal", "cat", "--data-dir", str(tmp_path / "data")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert [json.loads(ln) for ln in r.stdout.splitlines()] == [*_events(), *first]


_WITHOUT_PYARROW = """
import sys
class Hide:  # pyarrow is not installed, as far as this process can tell
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "pyarrow" or name.startswith("pyarrow."):
            raise ModuleNotFoundError(name)
sys.meta_path.insert(0, Hide())
from groupcoord.server.cli import main
sys.exit(main(["serve", "--journal-parquet", sys.argv[1], "--port", "0", "--data-dir", sys.argv[2]]))
"""


def test_journal_parquet_on_without_pyarrow_refuses_to_start_with_a_clear_message(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-c", _WITHOUT_PYARROW, "on", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode != 0
    assert "--journal-parquet on needs pyarrow" in r.stderr, r.stderr


def test_an_unknown_journal_parquet_value_is_refused() -> None:
    from groupcoord.server.cli import main

    with pytest.raises(SystemExit, match="--journal-parquet must be auto, on or off"):
        main(["serve", "--journal-parquet", "sometimes"])


def _children(pid: int) -> set[int]:
    kids: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        kids.update(int(k) for k in (task / "children").read_text().split())
    return kids


def test_a_server_rolls_files_of_earlier_processes_at_start_and_its_worker_dies_with_it(
    server_factory: Any, tmp_path: Path
) -> None:
    d = tmp_path / "data" / "journal"
    left = _write(d / "journal-100-00000.jsonl", _events())  # an earlier process's closed file
    twin = _write(d / "journal-100-00001.jsonl", _events())
    roll_file(_write(tmp_path / "journal-100-00001.jsonl", _events()))  # its twin was already rolled
    (tmp_path / "journal-100-00001.parquet").rename(d / "journal-100-00001.parquet")
    server = server_factory("--journal-parquet", "on", data_dir=tmp_path / "data")
    assert not twin.exists()  # deleted before the server listens
    deadline = time.monotonic() + 60
    while left.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left.exists()
    assert list(read_segment(d / "journal-100-00000.parquet")) == _events()
    assert server.proc is not None
    workers = _children(server.proc.pid)
    assert workers, "the roll worker process is gone already"
    server.kill()  # SIGKILL: the server cannot stop its worker
    deadline = time.monotonic() + 30
    while any(Path(f"/proc/{w}").exists() for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(Path(f"/proc/{w}").exists() for w in workers), (
        "an orphaned roll worker outlived its server"
    )


_SUBMIT_AND_DIE = """
import os, signal, sys
from pathlib import Path
from groupcoord.server.journal.roll import JournalRoller
JournalRoller(Path(sys.argv[1]).parent).submit(Path(sys.argv[1]))  # starts the worker process
os.kill(os.getpid(), signal.SIGKILL)  # gone before the worker has even imported its code
"""


def _marked(marker: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker.encode() in (proc / "environ").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def test_a_roll_worker_whose_server_died_before_it_started_ends_itself(tmp_path: Path) -> None:
    src = _write(tmp_path / "journal-1-00000.jsonl", _events())
    marker = f"GROUPCOORD_TEST_ROLL_ORPHAN={tmp_path}"
    env = dict(os.environ, GROUPCOORD_TEST_ROLL_ORPHAN=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", _SUBMIT_AND_DIE, str(src)], env=env, timeout=60)
    assert r.returncode == -signal.SIGKILL
    deadline = time.monotonic() + 30
    while _marked(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _marked(marker), "a roll worker outlived the server that started it"
