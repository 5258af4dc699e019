"""Incremental runs: parse each journal byte once, keep the parsed events as Parquet, checkpoint what was read.

With `--checkpoint-dir C` the job does not parse the whole journal each time. It keeps:

* `C/staged/journal_file=<journal file name>/*.parquet`: the prepared events (`transform.prepare`: the
  columns the report uses, assignments already hashed) of every JSONL journal file read so far, one
  partition per file;
* `C/checkpoint.json`: `{"version": 1, "files": {name: size_in_bytes_when_read}}`.

A run parses only the JSONL files that are new or whose size changed since the checkpoint (the file the
coordinator is still appending to, or one that had a torn last line), replaces just their partitions
(dynamic partition overwrite), then writes the checkpoint (temp file + rename). Parquet segments (closed
files the coordinator rolled, docs/journal.md) are already columnar: they are read directly, never staged.
When a staged JSONL file has since been rolled into a segment, its partition is dropped (the segment now
holds its events; keeping both would count them twice). The report is then computed from the staged and
segment Parquet: no JSON, so a scheduled run over months of journal costs the JSON parse of the new bytes
plus a Parquet scan. A crash between the writes only means the next run parses those files again.
Partitions of journal files that retention has since deleted are kept: the report still covers them.
Rebalances that span two runs are whole, because the analytics always see every event.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from groupcoord.pipeline import journal as J
from groupcoord.pipeline import transform as T
from groupcoord.pipeline.schema import JOURNAL_SCHEMA

CHECKPOINT_VERSION = 1
FILE_COLUMN = "journal_file"


@dataclass
class Staged:
    """What a staging step did: the files parsed now, and the staged events as a DataFrame."""

    parsed_files: list[str]
    events: DataFrame


def load_checkpoint(checkpoint_dir: Path) -> dict[str, int]:
    """`{journal file name: size read}`; {} when there is none yet. A newer version is refused."""
    path = checkpoint_dir / "checkpoint.json"
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    if data.get("version") != CHECKPOINT_VERSION:
        raise ValueError(f"{path}: checkpoint version {data.get('version')} is not {CHECKPOINT_VERSION}")
    return {str(k): int(v) for k, v in data["files"].items()}


def save_checkpoint(checkpoint_dir: Path, files: dict[str, int]) -> None:
    path = checkpoint_dir / "checkpoint.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(
        json.dumps({"version": CHECKPOINT_VERSION, "files": dict(sorted(files.items()))}, indent=1)
    )
    os.replace(tmp, path)


def stage(spark: SparkSession, data_dir: str | Path, checkpoint_dir: Path) -> Staged:
    """Parse the new and grown JSONL files into the staged Parquet; returns all events (prepared): the staged
    ones and those of the Parquet segments, read directly."""
    if J.is_uri(data_dir):
        raise ValueError(
            "--checkpoint-dir needs a local --data-dir (journal files are listed by name and size)"
        )
    checkpoint_dir.mkdir(parents=True, exist_ok=True)
    staged_dir = checkpoint_dir / "staged"
    done = load_checkpoint(checkpoint_dir)
    files = J.journal_files(data_dir)
    segments = {Path(f).name for f in files if f.endswith(".parquet")}
    # staged JSONL files the coordinator has since rolled into Parquet: their events now come from the
    # segment, so their partitions go (first: a crash before the checkpoint is saved just repeats this)
    rolled = sorted(n for n in done if Path(n).with_suffix(".parquet").name in segments)
    for name in rolled:
        shutil.rmtree(staged_dir / f"{FILE_COLUMN}={name}", ignore_errors=True)
    done = {n: size for n, size in done.items() if n not in rolled}
    sizes = {Path(f).name: Path(f).stat().st_size for f in files if f.endswith(".jsonl")}  # before reading
    todo = sorted(name for name, size in sizes.items() if done.get(name) != size)
    if todo:
        journal = Path(data_dir) / "journal"
        raw = (
            spark.read.schema(JOURNAL_SCHEMA)
            .option("mode", "DROPMALFORMED")
            .json([str(journal / n) for n in todo])
        )
        events = J.filter_events(raw, None, None)
        name = F.regexp_extract(F.input_file_name(), r"([^/]+)$", 1)
        (
            T.prepare(events)
            .withColumn(FILE_COLUMN, name)
            .write.mode("overwrite")
            .option("partitionOverwriteMode", "dynamic")
            .partitionBy(FILE_COLUMN)
            .parquet(str(staged_dir))
        )
    if todo or rolled:
        save_checkpoint(checkpoint_dir, {**done, **{n: sizes[n] for n in todo}})
    frames = []
    if any(staged_dir.glob(f"{FILE_COLUMN}=*")):
        frames.append(spark.read.parquet(str(staged_dir)).drop(FILE_COLUMN))
    parquet, _ = J.segment_paths(spark, data_dir)
    if parquet:
        segment_events = spark.read.schema(JOURNAL_SCHEMA).parquet(*parquet)
        frames.append(T.prepare(J.filter_events(segment_events, None, None)))
    if not frames:
        raise FileNotFoundError(f"no journal events in {data_dir}")
    # events staged by an older version of the job may lack later columns (the share_records counts)
    events = frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1], allowMissingColumns=True)
    return Staged(todo, events)


def select_range(events: DataFrame, since_ms: int | None, until_ms: int | None) -> DataFrame:
    cond = F.lit(True)
    if since_ms is not None:
        cond &= F.col("ts") >= F.lit(since_ms)
    if until_ms is not None:
        cond &= F.col("ts") < F.lit(until_ms)
    return events.filter(cond)
