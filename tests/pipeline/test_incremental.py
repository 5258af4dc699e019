"""Incremental runs (`--checkpoint-dir`): a second run parses only the journal written since the first, and
its report equals one full run over the whole journal."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from groupcoord.pipeline.incremental import load_checkpoint
from groupcoord.pipeline.job import TABLES, run_job
from tests.pipeline.compare import summary, table_rows

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]


def _generate(out: Path, parts: int = 4) -> list[Path]:
    """A synthetic journal of two simulated coordinator processes, each rotated into `parts` files."""
    subprocess.run(
        [sys.executable, str(REPO / "bench" / "journal_gen.py"), "--out", str(out), "--events", "6000",
         "--groups", "12", "--workers", "2"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    files = []
    for f in sorted((out / "journal").glob("*.jsonl")):
        lines = f.read_text().splitlines(keepends=True)
        f.unlink()
        stem = f.name.rsplit("-", 1)[0]
        for i in range(parts):
            part = out / "journal" / f"{stem}-{i:06d}.jsonl"
            part.write_text("".join(lines[len(lines) * i // parts : len(lines) * (i + 1) // parts]))
            files.append(part)
    return sorted(files)


def test_second_incremental_run_parses_only_new_journal_and_equals_a_full_run(
    spark: Any, tmp_path: Path
) -> None:
    files = _generate(tmp_path / "gen")
    assert len(files) >= 6
    data = tmp_path / "data"
    journal = data / "journal"
    journal.mkdir(parents=True)
    # as of the first run: the first files complete, the next one half written and cut mid-line (torn)
    first, growing = files[: len(files) // 2], files[len(files) // 2]
    for f in first:
        shutil.copy(f, journal / f.name)
    lines = growing.read_text().splitlines(keepends=True)
    (journal / growing.name).write_text("".join(lines[: len(lines) // 2]) + lines[len(lines) // 2][:40])
    ckpt = tmp_path / "checkpoint"

    r1 = run_job(spark, data, tmp_path / "out1", checkpoint_dir=ckpt, html=False)
    assert r1.parsed_files == len(first) + 1
    assert r1.events == sum(len(f.read_text().splitlines()) for f in first) + len(lines) // 2

    for f in files:  # the coordinator went on: the growing file is complete, later files appeared
        shutil.copy(f, journal / f.name)
    r2 = run_job(spark, data, tmp_path / "out2", checkpoint_dir=ckpt, html=False)
    assert r2.parsed_files == len(files) - len(first)  # only the grown file and the new ones
    assert load_checkpoint(ckpt) == {f.name: f.stat().st_size for f in files}

    full = run_job(spark, data, tmp_path / "full", html=False)
    assert r2.events == full.events == sum(len(f.read_text().splitlines()) for f in files)
    assert summary(tmp_path / "out2") == summary(tmp_path / "full")
    for t in TABLES:
        assert table_rows(spark, tmp_path / "out2" / "tables" / t) == table_rows(
            spark, tmp_path / "full" / "tables" / t
        ), t

    r3 = run_job(spark, data, tmp_path / "out3", checkpoint_dir=ckpt, html=False)
    assert r3.parsed_files == 0 and r3.events == full.events  # nothing new: nothing parsed


def test_a_staged_jsonl_file_later_rolled_into_parquet_is_counted_once(spark: Any, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    from groupcoord.server.journal.roll import roll_file

    files = _generate(tmp_path / "gen", parts=2)
    data = tmp_path / "data"
    (data / "journal").mkdir(parents=True)
    for f in files:
        shutil.copy(f, data / "journal" / f.name)
    ckpt = tmp_path / "checkpoint"
    r1 = run_job(spark, data, tmp_path / "out1", checkpoint_dir=ckpt, html=False)
    assert r1.parsed_files == len(files)

    rolled = data / "journal" / files[0].name
    roll_file(rolled)  # the coordinator rolls a closed file the checkpoint has already staged
    r2 = run_job(spark, data, tmp_path / "out2", checkpoint_dir=ckpt, html=False)
    assert r2.parsed_files == 0
    assert r2.events == r1.events
    assert rolled.name not in load_checkpoint(ckpt)
    assert not (ckpt / "staged" / f"journal_file={rolled.name}").exists()
    for t in TABLES:
        assert table_rows(spark, r2.tables[t]) == table_rows(spark, r1.tables[t]), t
    assert summary(r2.out) == summary(r1.out)
