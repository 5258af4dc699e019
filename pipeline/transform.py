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

Definitions of every column are in docs/report.md; the tests in tests/pipeline pin them down. Finding and
reading the journal's files is `pipeline/journal.py`'s; this module starts from its events.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window, WindowSpec
from pyspark.sql import functions as F

from groupcoord.pipeline.schema import END_CAUSES

PREPARING = "PreparingRebalance"
COMPLETING = "CompletingRebalance"
STABLE = "Stable"
EMPTY = "Empty"
DEAD = "Dead"

EXPIRED_REASONS = ("session_timeout", "rebalance_timeout", "sync_timeout")


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


#: the record counts of `share_records` events (share groups), summed per group by `group_event_stats`
SHARE_COUNTS = ("acquired", "acknowledged", "released", "archived")


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
        # whether `asg` is set, without computing it: a read of the columnar journal that only needs to know
        # (the static-member links) then skips hashing the assignments
        F.coalesce(stable_asg, F.lit(False)).alias("sa"),
        "offsets",
        *SHARE_COUNTS,
    )


def _has_assignment(prepared: DataFrame) -> Column:
    """`sa` of `prepare`; events staged by an older version of the job have only `asg`."""
    return F.col("sa") if "sa" in prepared.columns else F.col("asg").isNotNull()


def _hash(name: str) -> Column:
    return F.when(F.col(name).isNotNull(), F.xxhash64(name))


def _group_order() -> WindowSpec:
    """Per-group event order, partitioned by (64-bit hash of the group, group).

    The hash comes first so that Spark's sort, which compares an 8-byte prefix of its first key before the
    whole row, tells groups apart by the prefix: group ids often share their first 8 bytes ("orders-c…"),
    and a string first key sent every comparison to the full row. The name stays in the key, so two groups
    whose hashes collide are still two partitions.
    """
    return Window.partitionBy("gk", "group").orderBy("ts", "seq")


def rebalances(prepared: DataFrame) -> DataFrame:
    """One row per rebalance (docs/report.md, table `rebalances`), partitions moved included.

    The state changes and static rejoins (only the columns used; the cause only on start rows, the state
    only on end rows) are shuffled by group once and sorted; two window passes follow in that same order
    (the second needs no sort), with no aggregation and no join:

    1. over every row, running counts: `seg` (changes to Stable/Empty/Dead before the row: which rebalance
       a row belongs to), `span` (decoded Stable assignments before the row), PreparingRebalance
       transitions, static rejoins, SkipAssignment rejoins, and the last CompletingRebalance time;
    2. over the rows that start a rebalance (a change to PreparingRebalance from Stable/Empty, per the
       journal's `state_from`) or end one (a change to Stable/Empty/Dead): each end row picks up its start,
       the previous assignment and the previous end; a start with no end after it is a rebalance still
       open at the end of the data.

    Partitions moved compare each Stable assignment with the previous one (see `_links` for how static
    members' owners are resolved, so a restart that kept its partitions moves none).
    """
    ev = F.col("event")
    is_sc = ev == "state_change"
    to = F.col("state_to")
    is_rejoin = ev == "static_rejoin"
    starts = (
        is_sc & (to == PREPARING) & ~F.coalesce(F.col("state_from").isin(PREPARING, COMPLETING), F.lit(False))
    )
    ends = is_sc & to.isin(STABLE, EMPTY, DEAD)
    stream = prepared.filter(is_sc | is_rejoin).select(
        F.xxhash64("group").alias("gk"),
        "group",
        "ts",
        "seq",
        F.when(starts, F.col("reason")).alias("reason"),
        F.when(ends, to).alias("state_to"),
        "generation",
        "members",
        "asg",
        (is_sc & (to == PREPARING)).alias("prb"),
        starts.alias("is_start"),
        (is_sc & (to == COMPLETING)).alias("cr"),
        ends.alias("term"),
        _has_assignment(prepared).alias("sa"),
        is_rejoin.alias("rj"),
        (is_rejoin & F.coalesce(F.col("skip_assignment"), F.lit(False))).alias("sk"),
    )
    order = _group_order()
    # running frames (up to the current row) keep each pass a single sweep; "before" counts are the running
    # count minus the row itself
    upto = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    before = order.rowsBetween(Window.unboundedPreceding, -1)
    whole = order.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)

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
    start = F.struct("ts", "reason", "generation", "prb_cum", "seg")
    prev_end = F.struct("members", "rj_cum", "sk_cum")
    s2 = s1.filter(F.col("is_start") | F.col("term")).select(
        "*",
        F.last(F.when(F.col("is_start"), start), ignorenulls=True).over(upto).alias("start"),
        F.last(F.when(F.col("term"), prev_end), ignorenulls=True).over(before).alias("prev_end"),
        F.last(F.when(F.col("sa"), F.col("asg")), ignorenulls=True).over(before).alias("prev_asg"),
        # whole-partition frame: evaluated once per group (a frame running to the end would be quadratic)
        F.sum(F.col("term").cast("long")).over(whole).alias("terms"),
    )
    closed = F.col("term") & (F.col("start.seg") == F.col("seg"))
    still_open = F.col("is_start") & (F.col("seg") == F.col("terms"))
    rows = s2.filter(closed | still_open).select("*", closed.alias("closed"))
    stable = F.col("closed") & F.col("sa")
    # only Stable ends with an assignment need the links; the others skip the join's probe cheaply
    rows = rows.join(_links(prepared).hint("shuffle_hash"), ["gk", "group", "span"], "left")

    t0 = F.col("start.ts")
    end = F.when(F.col("closed"), F.col("ts"))
    outcome = F.when(F.col("closed"), to)
    cr_in = F.when(F.col("last_cr") >= t0, F.col("last_cr"))
    links_col = F.coalesce(F.col("links"), F.create_map().cast("map<bigint,bigint>"))

    def owned(asg: Column) -> Column:
        # one long per assigned partition: hash(partition, owner); owner = instance id if linked, else member
        return F.transform(
            asg, lambda a: F.xxhash64(a["t"], F.coalesce(F.try_element_at(links_col, a["m"]), a["m"]))
        )

    cur = owned(F.col("asg"))
    moved = F.size(cur) - F.coalesce(F.size(F.array_intersect(cur, owned(F.col("prev_asg")))), F.lit(0))
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
        F.coalesce(F.col("prev_end.members"), F.lit(0)).alias("members_before"),
        F.when(F.col("closed"), F.col("members")).alias("members_after"),
        F.when(stable, moved.cast("long")).alias("partitions_moved"),
        F.when(stable, F.col("prev_asg").isNull()).alias("first_assignment"),
        (F.col("prb_cum") - F.col("start.prb_cum") + 1).alias("join_rounds"),
        (F.col("rj_cum") - F.coalesce(F.col("prev_end.rj_cum"), F.lit(0))).alias("static_rejoins_before"),
        (F.col("sk_cum") > F.coalesce(F.col("prev_end.sk_cum"), F.lit(0))).alias("skip_assignment"),
        t0.alias("started_ms"),
    )


def _links(prepared: DataFrame) -> DataFrame:
    """Static member id -> instance id links of each span: `(gk, group, span, links)`.

    A span is the stretch after the group's `span`-th decoded Stable assignment, up to and including the
    next one; its links are the (member id, instance id) pairs of static members' joins, removals and
    rejoins in it (the new id and, for a rejoin or a replacement, the replaced id too). The assignment that
    closes the span resolves owners through them, both its own and the previous one: a static member that
    restarted under a new id and got its partitions back moved none. Only groups with static members have
    such rows; they are few, so this is one small shuffle, a sort and a hash aggregation.
    """
    ev = F.col("event")
    with_instance = F.col("group_instance_id").isNotNull() & ev.isin(
        "member_joined", "member_removed", "static_rejoin"
    )
    sa = _has_assignment(prepared)
    b = prepared.filter(sa | with_instance).select(
        F.xxhash64("group").alias("gk"),
        "group",
        "ts",
        "seq",
        sa.alias("sa"),
        F.when(with_instance, _hash("member_id")).alias("m"),
        F.when(with_instance, _hash("previous_member_id")).alias("pm"),
        F.when(with_instance, _hash("group_instance_id")).alias("i"),
    )
    upto = _group_order().rowsBetween(Window.unboundedPreceding, Window.currentRow)
    span = F.sum(F.col("sa").cast("long")).over(upto) - F.col("sa").cast("long")
    pairs = F.concat(
        F.array(F.when(F.col("m").isNotNull(), F.struct("m", "i"))),
        F.array(F.when(F.col("pm").isNotNull(), F.struct(F.col("pm").alias("m"), "i"))),
    )
    return (
        b.select("gk", "group", "i", pairs.alias("pairs"), span.alias("span"))
        .filter(F.col("i").isNotNull())
        .groupBy("gk", "group", "span")
        .agg(
            F.map_from_entries(F.filter(F.flatten(F.collect_list("pairs")), lambda x: x.isNotNull())).alias(
                "links"
            )
        )
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
        *(_share_sum(prepared, c) for c in SHARE_COUNTS),
    )


def _share_sum(prepared: DataFrame, name: str) -> Column:
    """`share_records_<name>`: the group's `share_records` counts summed (0 without share events; events
    staged by an older version of the job have no such column)."""
    value = F.col(name) if name in prepared.columns else F.lit(None).cast("long")
    total = F.sum(F.when(F.col("event") == "share_records", value))
    return F.coalesce(total, F.lit(0).cast("long")).alias(f"share_records_{name}")


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
    *(f"share_records_{c}" for c in SHARE_COUNTS),
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
        *(f"share_records_{c}" for c in SHARE_COUNTS),
        F.coalesce("causes", F.create_map().cast("map<string,bigint>")).alias("causes"),
        F.timestamp_millis("first_event_ms").alias("first_event"),
        F.timestamp_millis("last_event_ms").alias("last_event"),
    )
