"""The journal's input contract (`docs/journal.md`) as an explicit Spark schema.

An explicit schema (rather than inference) is what makes the job fast and safe: Spark parses each line once,
skips fields the job does not ask for, and a new field added by a later coordinator is ignored instead of
changing the table layout.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

#: The newest journal version (docs/journal.md "Versions") this pipeline knows; the report warns when it sees a
#: newer one (tests/pipeline/test_schema.py ties it to the writer's JOURNAL_VERSION).
KNOWN_JOURNAL_VERSION = 2

JOURNAL_SCHEMA = StructType(
    [
        StructField("v", LongType()),  # journal version of the line; null (absent) is version 1
        StructField("ts", LongType()),
        StructField("seq", LongType()),
        StructField("group", StringType()),
        StructField("event", StringType()),
        StructField("generation", LongType()),
        StructField("state_from", StringType()),
        StructField("state_to", StringType()),
        StructField("reason", StringType()),
        StructField("member_id", StringType()),
        StructField("previous_member_id", StringType()),
        StructField("group_instance_id", StringType()),
        StructField("client_id", StringType()),
        StructField("members", LongType()),
        StructField("leader", StringType()),
        StructField("protocol_type", StringType()),
        StructField("protocol", StringType()),
        StructField("skip_assignment", BooleanType()),
        StructField("assignment", MapType(StringType(), ArrayType(StringType()))),
        # lag_snapshot events only: {"topic-partition": {"committed": c, "log_end": e}}
        StructField(
            "offsets",
            MapType(
                StringType(),
                StructType([StructField("committed", LongType()), StructField("log_end", LongType())]),
            ),
        ),
        # consumer-group (KIP-848) events: the member's epoch; member_reconciled: target computed -> reconciled
        StructField("member_epoch", LongType()),
        StructField("duration_ms", LongType()),
        # share_records events (share groups): record counts of one ShareFetch / ShareAcknowledge / expiry
        StructField("acquired", LongType()),
        StructField("acknowledged", LongType()),
        StructField("released", LongType()),
        StructField("archived", LongType()),
    ]
)

# member_removed reasons -> member_sessions.end_cause (docs/report.md)
END_CAUSES: dict[str, str] = {
    "left": "left",
    "session_timeout": "expired",
    "rebalance_timeout": "expired",
    "sync_timeout": "expired",
    "static_replaced": "replaced",
    "group_max_size": "fenced",
}
