"""The transformations from journal events to the report tables, as plain DataFrame functions.

Everything here is Spark SQL expressions (no Python UDFs: they would ship every row through a Python worker,
and pandas/pyarrow are not dependencies), so the whole job runs in the JVM. The shape of the computation is
chosen for a 2-core machine:

* `prepare` keeps only the columns used and replaces each decoded assignment by 64-bit hashes of
  (partition, member) right after parsing; the job caches its result, so the JSON is parsed once;
* `rebalances` shuffles the state changes (and the few static-member events) by group once, and does
  everything else with window passes over that order: no aggregation with a sort, no join;
* partitions moved are counted per Stable assignment with higher-order array functions on those hashes,
  instead of exploding ~10 rows per assignment and joining;
* sessions and per-group counts are aggregations over the cached events.

Definitions of every column are in docs/report.md; the tests in tests/pipeline pin them down.
"""

from __future__ import annotations

import json
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from groupcoord.pipeline.schema import END_CAUSES, JOURNAL_SCHEMA

PREPARING = "PreparingRebalance"
COMPLETING = "CompletingRebalance"
STABLE = "Stable"
EMPTY = "Empty"
DEAD = "Dead"

EXPIRED_REASONS = ("session_timeout", "rebalance_timeout", "sync_timeout")


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


def read_journal(
    spark: SparkSession,
    data_dir: str | Path,
    since_ms: int | None = None,
    until_ms: int | None = None,
) -> DataFrame:
    """The journal's events with the fixed schema: Parquet segments read as they are, JSONL files parsed.

    DROPMALFORMED skips a torn last line (a crash can cut the final batch, docs/journal.md); rows without
    ts/group/event cannot be placed and are dropped. `since`/`until` select events by `ts` (until exclusive).
    Both readers give JOURNAL_SCHEMA's columns, so `prepare` cannot tell where a row came from.
    """
    parquet, jsonl = segment_paths(spark, data_dir)
    frames = []
    # JSON first: Spark lists files when a reader is created, so a file the running coordinator rolls
    # between the two listings is in one of them, never neither. One rolled after both listings is missing
    # when the job reads it: the job fails (docs/report.md: run it again) rather than silently lose it.
    if jsonl:
        frames.append(spark.read.schema(JOURNAL_SCHEMA).option("mode", "DROPMALFORMED").json(jsonl))
    if parquet:
        frames.append(spark.read.schema(JOURNAL_SCHEMA).parquet(*parquet))
    if not frames:
        raise FileNotFoundError(f"no journal files: {journal_glob(data_dir)} matched nothing")
    df = frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])
    return filter_events(df, since_ms, until_ms)


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


def _is_state_change(to: str | tuple[str, ...]) -> Column:
    states = (to,) if isinstance(to, str) else to
    return (F.col("event") == "state_change") & F.col("state_to").isin(*states)


def _compact_assignment(assignment: Column) -> Column:
    """`{member: [tp, ...]}` -> `[{t: hash(tp), m: hash(member)}, ...]`, one entry per assigned partition.

    Only identity matters for counting moves, so 64-bit hashes replace the strings before the shuffle: a
    decoded assignment is the biggest value in the journal (~70 bytes per partition), this is 16.
    """
    return F.flatten(
        F.transform(
            F.map_entries(assignment),
            lambda e: F.transform(
                e["value"], lambda tp: F.struct(F.xxhash64(tp).alias("t"), F.xxhash64(e["key"]).alias("m"))
            ),
        )
    )


def prepare(events: DataFrame) -> DataFrame:
    """The columns the job uses, with assignments already compacted; the job caches this (parse once)."""
    stable_asg = _is_state_change(STABLE) & F.col("assignment").isNotNull()
    return events.select(
        "group",
        "ts",
        "seq",
        "event",
        "generation",
        "state_from",
        "state_to",
        "reason",
        "member_id",
        "previous_member_id",
        "group_instance_id",
        "client_id",
        "members",
        "skip_assignment",
        F.when(stable_asg, _compact_assignment(F.col("assignment"))).alias("asg"),
        "offsets",
    )


def _hash(name: str) -> Column:
    return F.when(F.col(name).isNotNull(), F.xxhash64(name))


def rebalances(prepared: DataFrame) -> DataFrame:
    """One row per rebalance (docs/report.md, table `rebalances`), partitions moved included.

    The state changes, static rejoins and static-member events are shuffled by group once and sorted; two
    window passes follow, with no aggregation and no join:

    1. in (ts, seq) order: running counts — `seg` (changes to Stable/Empty/Dead before the row: which
       rebalance a row belongs to), `span` (decoded Stable assignments before the row), PreparingRebalance
       transitions, static rejoins, SkipAssignment rejoins — and the last CompletingRebalance time;
    2. over the rows that start a rebalance (a change to PreparingRebalance from Stable/Empty, per the
       journal's `state_from`), end one (a change to Stable/Empty/Dead) or link a static member id to its
       instance id, in (span, ts, seq) order (the same order, so one more sort of fewer rows): each end row
       picks up its start, the previous assignment and the previous end; a start with no end after it is a
       rebalance still open at the end of the data; the instance links of each span are collected for
       the assignment that closes it.

    Partitions moved compare each Stable assignment with the previous one, owners resolved through those
    links (a static member's new id maps to its instance id, so a restart that kept partitions moves none).
    """
    ev = F.col("event")
    is_sc = ev == "state_change"
    to = F.col("state_to")
    with_instance = F.col("group_instance_id").isNotNull() & ev.isin(
        "member_joined", "member_removed", "static_rejoin"
    )
    is_rejoin = ev == "static_rejoin"
    stream = prepared.filter(is_sc | is_rejoin | with_instance).select(
        "group",
        "ts",
        "seq",
        "reason",
        "state_to",
        "generation",
        "members",
        "asg",
        is_sc.alias("sc"),
        (is_sc & (to == PREPARING)).alias("prb"),
        # a rebalance starts with a change to PreparingRebalance from outside one (from Stable or Empty)
        (
            is_sc
            & (to == PREPARING)
            & ~F.coalesce(F.col("state_from").isin(PREPARING, COMPLETING), F.lit(False))
        ).alias("start_row"),
        (is_sc & (to == COMPLETING)).alias("cr"),
        (is_sc & to.isin(STABLE, EMPTY, DEAD)).alias("term"),
        F.col("asg").isNotNull().alias("sa"),
        is_rejoin.alias("rj"),
        (is_rejoin & F.coalesce(F.col("skip_assignment"), F.lit(False))).alias("sk"),
        with_instance.alias("lk"),
        _hash("member_id").alias("m"),
        _hash("previous_member_id").alias("pm"),
        _hash("group_instance_id").alias("i"),
    )
    # one frame kind (running, up to the current row) keeps pass 1 a single sweep; "before" counts are the
    # running count minus the row itself
    upto = (
        Window.partitionBy("group")
        .orderBy("ts", "seq")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )

    def running(c: str) -> Column:
        return F.sum(F.col(c).cast("long")).over(upto)

    s1 = stream.select(
        "*",
        (running("term") - F.col("term").cast("long")).alias("seg"),
        (running("sa") - F.col("sa").cast("long")).alias("span"),
        running("prb").alias("prb_cum"),
        running("rj").alias("rj_cum"),
        running("sk").alias("sk_cum"),
        F.last(F.when(F.col("cr"), F.col("ts")), ignorenulls=True).over(upto).alias("last_cr"),
    )
    key = s1.filter(F.col("start_row") | F.col("term") | F.col("lk")).withColumnRenamed(
        "start_row", "is_start"
    )
    # (span, ts, seq) is the same order as (ts, seq) within a group; both specs below need one sort
    w2 = Window.partitionBy("group").orderBy("span", "ts", "seq")
    before2 = w2.rowsBetween(Window.unboundedPreceding, -1)
    upto2 = w2.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    in_span = (
        Window.partitionBy("group", "span")
        .orderBy("ts", "seq")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    lk = F.col("lk")
    start = F.struct("ts", "reason", "generation", "prb_cum", "seg")
    s2 = key.select(
        "*",
        F.last(F.when(F.col("is_start"), start), ignorenulls=True).over(upto2).alias("start"),
        F.last(F.when(F.col("sa"), F.col("asg")), ignorenulls=True).over(before2).alias("prev_asg"),
        F.last(F.when(F.col("term"), F.col("members")), ignorenulls=True)
        .over(before2)
        .alias("prev_term_members"),
        F.last(F.when(F.col("term"), F.col("rj_cum")), ignorenulls=True).over(before2).alias("prev_term_rj"),
        F.last(F.when(F.col("term"), F.col("sk_cum")), ignorenulls=True).over(before2).alias("prev_term_sk"),
        F.sum(F.col("term").cast("long")).over(Window.partitionBy("group")).alias("terms"),
        # static member id -> instance id links seen since the previous assignment (member_id and, for
        # static_rejoin / static_replaced, previous_member_id)
        F.collect_list(F.when(lk & F.col("m").isNotNull(), F.struct("m", "i"))).over(in_span).alias("l1"),
        F.collect_list(F.when(lk & F.col("pm").isNotNull(), F.struct(F.col("pm").alias("m"), "i")))
        .over(in_span)
        .alias("l2"),
    )
    closed = F.col("term") & (F.col("start.seg") == F.col("seg"))
    still_open = F.col("is_start") & (F.col("seg") == F.col("terms"))
    rows = s2.filter(closed | still_open).select(
        "*", closed.alias("closed"), F.map_from_entries(F.concat("l1", "l2")).alias("links")
    )

    t0 = F.col("start.ts")
    end = F.when(F.col("closed"), F.col("ts"))
    outcome = F.when(F.col("closed"), to)
    cr_in = F.when(F.col("last_cr") >= t0, F.col("last_cr"))
    links_col = F.col("links")

    def owned(asg: Column) -> Column:
        # one long per assigned partition: hash(partition, owner); owner = instance id if linked, else member
        return F.transform(
            asg, lambda a: F.xxhash64(a["t"], F.coalesce(F.try_element_at(links_col, a["m"]), a["m"]))
        )

    stable = F.col("closed") & F.col("sa")
    cur = owned(F.col("asg"))
    kept = F.coalesce(F.size(F.array_intersect(cur, owned(F.col("prev_asg")))), F.lit(0))
    return rows.select(
        "group",
        F.coalesce(F.when(F.col("closed"), F.col("generation")), F.col("start.generation")).alias(
            "generation"
        ),
        F.timestamp_millis(t0).alias("started"),
        F.timestamp_millis(end).alias("ended"),
        (end - t0).alias("duration_ms"),
        (F.when(F.col("closed"), F.coalesce(cr_in, end)) - t0).alias("join_ms"),
        F.when(F.col("closed") & (to == STABLE), end - cr_in).alias("sync_ms"),
        F.col("start.reason").alias("cause"),
        outcome.alias("outcome"),
        F.coalesce(F.col("prev_term_members"), F.lit(0)).alias("members_before"),
        F.when(F.col("closed"), F.col("members")).alias("members_after"),
        F.when(stable, (F.size(cur) - kept).cast("long")).alias("partitions_moved"),
        F.when(stable, F.col("prev_asg").isNull()).alias("first_assignment"),
        (F.col("prb_cum") - F.col("start.prb_cum") + 1).alias("join_rounds"),
        (F.col("rj_cum") - F.coalesce(F.col("prev_term_rj"), F.lit(0))).alias("static_rejoins_before"),
        (F.col("sk_cum") > F.coalesce(F.col("prev_term_sk"), F.lit(0))).alias("skip_assignment"),
        t0.alias("started_ms"),
    )


REBALANCE_COLUMNS = [
    "group",
    "generation",
    "started",
    "ended",
    "duration_ms",
    "join_ms",
    "sync_ms",
    "cause",
    "outcome",
    "members_before",
    "members_after",
    "partitions_moved",
    "first_assignment",
    "join_rounds",
    "static_rejoins_before",
    "skip_assignment",
    "started_ms",
]


def _end_cause(reason: Column) -> Column:
    expr = F.lit(None).cast("string")
    for raw, cause in END_CAUSES.items():
        expr = F.when(reason == raw, F.lit(cause)).otherwise(expr)
    return expr


END_REASONS = (*END_CAUSES, "static_rejoin")  # index = code in the packed end key; unknown -> len()


def member_sessions(prepared: DataFrame) -> DataFrame:
    """One row per member id (docs/report.md, table `member_sessions`).

    A session starts at `member_joined` (or the `static_rejoin` that introduced the id) and ends at the
    member's `member_removed`, or at the `static_rejoin` that replaced it (end cause `replaced`). The
    coordinator writes exactly one start per member id. The earliest end is found with a hash aggregation
    on a packed `ts * 8 + reason code` (fixed-width, so no sort), then joined to the starts with a hash join.
    """
    ev = F.col("event")
    removed = ev == "member_removed"
    replaced_by_rejoin = (ev == "static_rejoin") & F.col("previous_member_id").isNotNull()
    # member_removed(static_replaced) is about the replaced id, which the journal puts in previous_member_id
    removed_id = F.when(
        F.col("reason") == "static_replaced", F.coalesce("previous_member_id", "member_id")
    ).otherwise(F.col("member_id"))
    raw_reason = F.when(removed, F.col("reason")).otherwise(F.lit("static_rejoin"))
    code = F.lit(len(END_REASONS))
    for i, r in enumerate(END_REASONS):
        code = F.when(raw_reason == r, F.lit(i)).otherwise(code)
    starts = prepared.filter(
        ev.isin("member_joined", "static_rejoin") & F.col("member_id").isNotNull()
    ).select(
        "group",
        F.col("member_id").alias("member"),
        F.col("ts").alias("start_ts"),
        "group_instance_id",
        "client_id",
    )
    ends = (
        prepared.filter(removed | replaced_by_rejoin)
        .select(
            "group",
            F.when(removed, removed_id).otherwise(F.col("previous_member_id")).alias("member"),
            (F.col("ts") * 8 + code).alias("end_key"),
        )
        .filter(F.col("member").isNotNull())
        .groupBy("group", "member")
        .agg(F.min("end_key").alias("end_key"))
    )
    s = starts.join(ends.hint("shuffle_hash"), ["group", "member"], "full_outer")
    end_ts = F.expr("end_key div 8")
    labels = F.array(*(F.lit(r) for r in (*END_REASONS, "other")))
    reason = F.try_element_at(labels, (F.col("end_key") % 8 + 1).cast("int"))
    return s.select(
        "group",
        F.col("member").alias("member_id"),
        "group_instance_id",
        "client_id",
        F.timestamp_millis("start_ts").alias("joined"),
        F.timestamp_millis(end_ts).alias("ended"),
        (end_ts - F.col("start_ts")).alias("duration_ms"),
        F.when(reason == "static_rejoin", F.lit("replaced")).otherwise(_end_cause(reason)).alias("end_cause"),
        reason.alias("end_reason"),
    )


def group_event_stats(prepared: DataFrame) -> DataFrame:
    """Per-group counts straight from the events (membership changes and static rejoins)."""
    ev = F.col("event")
    reason = F.col("reason")
    removed = ev == "member_removed"
    rejoin = ev == "static_rejoin"

    def count_if(cond: Column, name: str) -> Column:
        return F.sum(cond.cast("long")).alias(name)

    return prepared.groupBy("group").agg(
        F.count(F.lit(1)).alias("events"),
        F.min("ts").alias("first_event_ms"),
        F.max("ts").alias("last_event_ms"),
        count_if(ev == "member_joined", "members_joined"),
        count_if(removed & (reason == "left"), "members_left"),
        count_if(removed & reason.isin(*EXPIRED_REASONS), "members_expired"),
        count_if(removed & (reason == "group_max_size"), "members_fenced"),
        count_if(removed & (reason == "static_replaced"), "members_replaced"),
        count_if(rejoin, "static_rejoins"),
        count_if(rejoin & F.coalesce(F.col("skip_assignment"), F.lit(False)), "skip_assignments"),
        count_if(ev == "group_deleted", "deletions"),
    )


def group_rebalance_stats(rebal: DataFrame) -> DataFrame:
    """Per-group rebalance counts and exact duration percentiles (completed rebalances only)."""
    d = F.col("duration_ms")
    causes = (
        rebal.groupBy("group", "cause")
        .count()
        .groupBy("group")
        .agg(
            F.map_from_entries(
                F.collect_list(F.struct(F.coalesce("cause", F.lit("unknown")), "count"))
            ).alias("causes")
        )
    )
    stats = rebal.groupBy("group").agg(
        F.count(F.lit(1)).alias("rebalances"),
        F.percentile(d, 0.5).alias("rebalance_p50_ms"),
        F.percentile(d, 0.99).alias("rebalance_p99_ms"),
        F.max(d).alias("rebalance_max_ms"),
        F.sum(d).alias("rebalance_total_ms"),
        F.sum(F.when(~F.col("first_assignment"), F.col("partitions_moved"))).alias("partitions_moved"),
        F.sum("partitions_moved").alias("partitions_moved_incl_first"),
    )
    return stats.join(causes, "group", "left")


#: per-group counters that summary.json also totals over all groups
COUNT_COLUMNS = (
    "members_joined",
    "members_left",
    "members_expired",
    "members_fenced",
    "members_replaced",
    "static_rejoins",
    "skip_assignments",
    "partitions_moved",
    "partitions_moved_incl_first",
    "deletions",
)

GROUP_SUMMARY_COLUMNS = [
    "group",
    "events",
    "rebalances",
    "rebalance_p50_ms",
    "rebalance_p99_ms",
    "rebalance_max_ms",
    "rebalance_total_ms",
    *COUNT_COLUMNS,
    "causes",
    "first_event",
    "last_event",
]


def group_summary(prepared: DataFrame, rebal: DataFrame) -> DataFrame:
    """One row per group: event counts joined with rebalance statistics (groups without rebalances: 0)."""
    s = group_event_stats(prepared).join(group_rebalance_stats(rebal), "group", "left")
    zero = F.lit(0).cast("long")
    return s.select(
        "group",
        "events",
        F.coalesce("rebalances", zero).alias("rebalances"),
        "rebalance_p50_ms",
        "rebalance_p99_ms",
        "rebalance_max_ms",
        F.coalesce("rebalance_total_ms", zero).alias("rebalance_total_ms"),
        "members_joined",
        "members_left",
        "members_expired",
        "members_fenced",
        "members_replaced",
        "static_rejoins",
        "skip_assignments",
        F.coalesce("partitions_moved", zero).alias("partitions_moved"),
        F.coalesce("partitions_moved_incl_first", zero).alias("partitions_moved_incl_first"),
        "deletions",
        F.coalesce("causes", F.create_map().cast("map<string,bigint>")).alias("causes"),
        F.timestamp_millis("first_event_ms").alias("first_event"),
        F.timestamp_millis("last_event_ms").alias("last_event"),
    )
