"""The journal's files as the report reads them: which segments a data dir holds (Parquet, and JSONL without a
Parquet twin), local or under a URI, read into JOURNAL_SCHEMA's columns and filtered by time; and the journal
versions present. `pipeline/transform.py` computes the tables from these events.
"""

from __future__ import annotations

import json
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from groupcoord.pipeline.schema import JOURNAL_SCHEMA


def is_uri(data_dir: str | Path) -> bool:
    return "://" in str(data_dir)


def journal_glob(data_dir: str | Path, ext: str = "{jsonl,parquet}") -> str:
    """`<data-dir>/journal/*.<ext>`, keeping URIs (hdfs://, s3a://, file://) intact for cluster runs."""
    d = str(data_dir)
    return f"{d.rstrip('/')}/journal/*.{ext}" if is_uri(d) else str(Path(d) / "journal" / f"*.{ext}")


def journal_files(data_dir: str | Path) -> list[str]:
    """The journal segments: every `*.parquet`, and every `*.jsonl` without a Parquet twin (the coordinator
    rolls closed JSONL files into Parquet, docs/journal.md); [] when there are none.

    A URI cannot be listed from here without Hadoop; it is returned as its two globs (`read_journal` reads
    those that match anything).
    """
    if is_uri(data_dir):
        return [journal_glob(data_dir, "parquet"), journal_glob(data_dir, "jsonl")]
    d = Path(data_dir) / "journal"
    if not d.is_dir():
        return []
    parquet = {p.stem for p in d.glob("*.parquet")}
    return sorted(
        str(p)
        for p in (*d.glob("*.parquet"), *d.glob("*.jsonl"))
        if p.suffix == ".parquet" or p.stem not in parquet
    )


def segment_paths(spark: SparkSession, data_dir: str | Path) -> tuple[list[str], list[str]]:
    """What to hand Spark's Parquet and JSON readers: a glob where it matches exactly the right files (the
    plan stays small), else the file list; nothing for a format without files (Spark errors on an empty glob).

    A URI data dir gets both globs, each only when it matches something (asked of Hadoop's file system). A
    JSONL file whose Parquet twin exists is then read twice; the server deletes such twins when it starts, so
    one exists only for the instant between a roll's rename and its delete.
    """
    if is_uri(data_dir):
        globs = (journal_glob(data_dir, "parquet"), journal_glob(data_dir, "jsonl"))
        parquet, jsonl = ([g] if _matches(spark, g) else [] for g in globs)
        return parquet, jsonl
    files = journal_files(data_dir)
    parquet = [f for f in files if f.endswith(".parquet")]
    jsonl = [f for f in files if f.endswith(".jsonl")]
    all_jsonl = list((Path(data_dir) / "journal").glob("*.jsonl"))
    return (
        [journal_glob(data_dir, "parquet")] if parquet else [],
        ([journal_glob(data_dir, "jsonl")] if len(jsonl) == len(all_jsonl) else jsonl) if jsonl else [],
    )


def _matches(spark: SparkSession, glob: str) -> bool:
    jvm = spark.sparkContext._jvm  # Hadoop FileSystem: only reachable through py4j
    path = jvm.org.apache.hadoop.fs.Path(glob)
    found = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).globStatus(path)
    return found is not None and len(found) > 0


def read_journal_parts(
    spark: SparkSession,
    data_dir: str | Path,
    since_ms: int | None = None,
    until_ms: int | None = None,
) -> tuple[DataFrame | None, DataFrame | None]:
    """The journal's events as (from Parquet segments, from JSONL files), either None when it has no files.

    Both give JOURNAL_SCHEMA's columns, so `prepare` cannot tell where a row came from; they are apart so
    the job can keep the parsed JSON (parsing is the expensive part) while scanning the columnar segments
    again per table. DROPMALFORMED skips a torn last line (a crash can cut the final batch,
    docs/journal.md); rows without ts/group/event cannot be placed and are dropped. `since`/`until` select
    events by `ts` (until exclusive).
    """
    parquet, jsonl = segment_paths(spark, data_dir)
    # JSON first: Spark lists files when a reader is created, so a file the running coordinator rolls
    # between the two listings is in one of them, never neither. One rolled after both listings is missing
    # when the job reads it: the job fails (docs/report.md: run it again) rather than silently lose it.
    js = spark.read.schema(JOURNAL_SCHEMA).option("mode", "DROPMALFORMED").json(jsonl) if jsonl else None
    pq = spark.read.schema(JOURNAL_SCHEMA).parquet(*parquet) if parquet else None
    if pq is None and js is None:
        raise FileNotFoundError(f"no journal files: {journal_glob(data_dir)} matched nothing")
    return (
        None if pq is None else filter_events(pq, since_ms, until_ms),
        None if js is None else filter_events(js, since_ms, until_ms),
    )


def read_journal(
    spark: SparkSession,
    data_dir: str | Path,
    since_ms: int | None = None,
    until_ms: int | None = None,
) -> DataFrame:
    """All of the journal's events (`read_journal_parts`, united)."""
    frames = [f for f in read_journal_parts(spark, data_dir, since_ms, until_ms) if f is not None]
    return frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])


def filter_events(df: DataFrame, since_ms: int | None, until_ms: int | None) -> DataFrame:
    cond = F.col("ts").isNotNull() & F.col("group").isNotNull() & F.col("event").isNotNull()
    if since_ms is not None:
        cond &= F.col("ts") >= F.lit(since_ms)
    if until_ms is not None:
        cond &= F.col("ts") < F.lit(until_ms)
    return df.filter(cond)


def journal_versions(spark: SparkSession, data_dir: str | Path) -> list[int]:
    """The journal versions present, cheaply: the `v` column of the Parquet segments (a few bytes a row
    group) and the first line of each local JSONL file (a file is written by one process, so by one
    version). JSONL under a URI is not looked at."""
    parquet, _ = segment_paths(spark, data_dir)
    found: set[int] = set()
    if parquet:
        v = StructType([StructField("v", LongType())])
        found.update(r["v"] or 1 for r in spark.read.schema(v).parquet(*parquet).distinct().collect())
    if not is_uri(data_dir):
        for f in journal_files(data_dir):
            if f.endswith(".jsonl"):
                found.add(_first_line_version(Path(f)))
    return sorted(found)


def _first_line_version(path: Path) -> int:
    with open(path, "rb") as fh:
        line = fh.readline()
    try:
        v = json.loads(line).get("v")
    except (ValueError, AttributeError):
        return 1
    return v if isinstance(v, int) else 1
