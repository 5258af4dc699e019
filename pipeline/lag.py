"""Lag analytics from the journal's `lag_snapshot` events (docs/journal.md, docs/report.md).

Two small tables, both Spark SQL expressions (no Python UDFs):

* `lag`: one row per snapshot: a group's total lag (sum over its partitions of log end minus committed,
  negative values clipped to 0), its largest partition lag and the partitions counted;
* `rebalance_lag`: one row per rebalance: the group's lag at the last snapshot before the rebalance
  started, the peak lag from its start until the next rebalance starts, the time from its end until a
  snapshot shows the lag back at (or below) its level before, and whether it caused a lag spike.

Snapshots are few (groups x intervals), so `rebalance_lag` is one union of rebalance starts and snapshots,
ordered per group, two window passes and one aggregation.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

LAG_EVENT = "lag_snapshot"
#: a rebalance "caused a lag spike" when the peak lag after its start is at least twice the lag before
#: it and at least this many messages more
SPIKE_MIN_MESSAGES = 100

LAG_COLUMNS = ["group", "ts", "lag", "max_partition_lag", "partitions", "ts_ms"]
REBALANCE_LAG_COLUMNS = [
    "group",
    "generation",
    "started",
    "ended",
    "cause",
    "lag_before",
    "peak_lag",
    "peak_at",
    "time_to_catch_up_ms",
    "lag_spike",
    "started_ms",
]


def lag_over_time(prepared: DataFrame) -> DataFrame:
    """One row per `lag_snapshot` event (table `lag`); partitions without a log end are left out."""
    known = F.filter(F.map_values("offsets"), lambda v: v["log_end"].isNotNull() & v["committed"].isNotNull())
    lags = F.transform(known, lambda v: F.greatest(v["log_end"] - v["committed"], F.lit(0).cast("long")))
    return prepared.filter((F.col("event") == LAG_EVENT) & F.col("offsets").isNotNull()).select(
        "group",
        F.timestamp_millis("ts").alias("ts"),
        F.aggregate(lags, F.lit(0).cast("long"), lambda a, x: a + x).alias("lag"),
        F.coalesce(F.array_max(lags), F.lit(0).cast("long")).alias("max_partition_lag"),
        F.size(known).alias("partitions"),
        F.col("ts").alias("ts_ms"),
    )


def _spike(before: Column, peak: Column) -> Column:
    b = F.coalesce(before, F.lit(0))
    return F.coalesce((peak >= b * 2) & (peak - b >= F.lit(SPIKE_MIN_MESSAGES)), F.lit(False))


def rebalance_lag(lag: DataFrame, rebal: DataFrame) -> DataFrame:
    """One row per rebalance of a group that has lag snapshots (table `rebalance_lag`).

    Order per group: snapshots before a rebalance start at the same millisecond (kind 0 < 1), so a snapshot
    taken as the rebalance began counts as "before". `seg` numbers the rebalances; every snapshot belongs to
    the last rebalance started before it.
    """
    starts = rebal.select(
        "group",
        F.col("started_ms").alias("t"),
        F.lit(1).alias("kind"),
        F.struct(
            "generation",
            "started",
            "ended",
            "cause",
            "started_ms",
            (F.col("started_ms") + F.col("duration_ms")).alias("ended_ms"),  # null while still open
        ).alias("r"),
        F.lit(None).cast("long").alias("lag"),
    )
    snaps = lag.select(
        "group",
        F.col("ts_ms").alias("t"),
        F.lit(0).alias("kind"),
        F.lit(None).cast(starts.schema["r"].dataType).alias("r"),
        "lag",
    )
    groups_with_lag = lag.select("group").distinct()
    u = starts.join(groups_with_lag, "group", "left_semi").unionByName(snaps)
    w = Window.partitionBy("group").orderBy("t", "kind")
    upto = w.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    before = w.rowsBetween(Window.unboundedPreceding, -1)
    u = u.select(
        "*",
        F.sum("kind").over(upto).alias("seg"),
        F.when(F.col("kind") == 1, F.last("lag", ignorenulls=True).over(before)).alias("lag_before"),
    )
    u = u.select(
        "*",
        F.last(F.when(F.col("kind") == 1, F.struct("r", "lag_before")), ignorenulls=True)
        .over(upto)
        .alias("cur"),
    ).filter(F.col("seg") > 0)
    is_snap = F.col("kind") == 0
    end_ms = F.col("cur.r.ended_ms")
    caught = is_snap & end_ms.isNotNull() & (F.col("t") >= end_ms) & (F.col("lag") <= F.col("cur.lag_before"))
    agg = u.groupBy("group", "seg").agg(
        F.first("cur", ignorenulls=True).alias("cur"),
        F.max(F.when(is_snap, F.struct("lag", F.col("t").alias("at")))).alias("peak"),
        F.min(F.when(caught, F.col("t"))).alias("caught_ms"),
    )
    peak = F.col("peak.lag")
    return agg.select(
        "group",
        F.col("cur.r.generation").alias("generation"),
        F.col("cur.r.started").alias("started"),
        F.col("cur.r.ended").alias("ended"),
        F.col("cur.r.cause").alias("cause"),
        F.col("cur.lag_before").alias("lag_before"),
        peak.alias("peak_lag"),
        F.timestamp_millis(F.col("peak.at")).alias("peak_at"),
        (F.col("caught_ms") - end_ms).alias("time_to_catch_up_ms"),
        _spike(F.col("cur.lag_before"), peak).alias("lag_spike"),
        F.col("cur.r.started_ms").alias("started_ms"),
    )
