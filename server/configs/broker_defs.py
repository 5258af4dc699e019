"""The broker configs groupcoord describes: the static ones it takes from its command line (read-only, as in
Kafka) and the dynamic log defaults Kafka lets AlterConfigs change at run time (`DynamicLogConfig`), which
supply every topic's defaults through the topic configs' synonyms."""

from __future__ import annotations

from groupcoord.server.configs.listener_defs import LISTENER_DEFS
from groupcoord.server.configs.topic_defs import COMPRESSION_TYPES
from groupcoord.server.configs.types import (
    INT_MAX,
    LONG_MAX,
    ConfigDef,
    ConfigType,
    at_least,
    between,
    gzip_level,
    list_of,
    one_of,
)

_B, _S, _I, _L, _D, _LIST = (
    ConfigType.BOOLEAN,
    ConfigType.STRING,
    ConfigType.INT,
    ConfigType.LONG,
    ConfigType.DOUBLE,
    ConfigType.LIST,
)


def _static(name: str, typ: ConfigType, default: str | None, attr: str, doc: str) -> ConfigDef:
    return ConfigDef(name, typ, default, doc, attr=attr)


def _dynamic(
    name: str, typ: ConfigType, default: str | None, doc: str, check=None, attr: str | None = None
) -> ConfigDef:  # type: ignore[no-untyped-def]
    return ConfigDef(name, typ, default, doc, check, dynamic=True, attr=attr)


_DEFS = (
    _static("node.id", _I, None, "node_id", "The node ID associated with the roles this process is playing."),
    _static(
        "broker.rack",
        _S,
        None,
        "broker_rack",
        "Rack of the broker. This will be used in rack aware replication assignment for fault tolerance.",
    ),
    _static(
        "auto.create.topics.enable",
        _B,
        "true",
        "auto_create_topics_enable",
        "Enable auto creation of topic on the server.",
    ),
    _static("num.partitions", _I, "1", "num_partitions", "The default number of log partitions per topic"),
    _static(
        "offsets.topic.num.partitions",
        _I,
        "50",
        "offsets_topic_num_partitions",
        "The number of partitions for the offset commit topic (should not change after deployment).",
    ),
    _static(
        "offsets.retention.minutes",
        _I,
        "10080",
        "offsets_retention_minutes",
        "For subscribed consumers, committed offset of a specific partition will be expired and discarded "
        "when 1) this retention period has elapsed after the consumer group loses all its consumers (i.e. "
        "becomes empty); 2) this retention period has elapsed since the last time an offset is committed "
        "for the partition and the group is no longer subscribed to the corresponding topic.",
    ),
    _static(
        "offsets.retention.check.interval.ms",
        _L,
        "600000",
        "offsets_retention_check_interval_ms",
        "Frequency at which to check for stale offsets",
    ),
    _static(
        "offset.metadata.max.bytes",
        _I,
        "4096",
        "offset_metadata_max_bytes",
        "The maximum size for a metadata entry associated with an offset commit.",
    ),
    _static(
        "group.initial.rebalance.delay.ms",
        _I,
        "3000",
        "group_initial_rebalance_delay_ms",
        "The amount of time the group coordinator will wait for more consumers to join a new group before "
        "performing the first rebalance.",
    ),
    _static(
        "group.min.session.timeout.ms",
        _I,
        "6000",
        "group_min_session_timeout_ms",
        "The minimum allowed session timeout for registered consumers.",
    ),
    _static(
        "group.max.session.timeout.ms",
        _I,
        "1800000",
        "group_max_session_timeout_ms",
        "The maximum allowed session timeout for registered consumers.",
    ),
    _static(
        "group.max.size",
        _I,
        str(INT_MAX),
        "group_max_size",
        "The maximum number of consumers that a single consumer group can accommodate.",
    ),
    _static(
        "socket.request.max.bytes",
        _I,
        "104857600",
        "socket_request_max_bytes",
        "The maximum number of bytes in a socket request",
    ),
    _static(
        "connections.max.idle.ms",
        _L,
        "600000",
        "connections_max_idle_ms",
        "Idle connections timeout: the server socket processor threads close the connections that idle "
        "more than this",
    ),
    _static(
        "max.connections",
        _I,
        str(INT_MAX),
        "max_connections",
        "The maximum number of connections we allow in the broker at any time.",
    ),
    _static(
        "max.connections.per.ip",
        _I,
        str(INT_MAX),
        "max_connections_per_ip",
        "The maximum number of connections we allow from each ip address.",
    ),
    _dynamic(
        "log.cleanup.policy",
        _LIST,
        "delete",
        "The default cleanup policy for segments beyond the "
        "retention window. A comma separated list of valid policies.",
        list_of(("compact", "delete"), allow_empty=True),
        "log_cleanup_policy",
    ),
    _dynamic(
        "log.retention.bytes",
        _L,
        "-1",
        "The maximum size of the log before deleting it",
        None,
        "log_retention_bytes",
    ),
    _dynamic(
        "log.retention.ms",
        _L,
        None,
        "The number of milliseconds to keep a log file before deleting it "
        "(in milliseconds), If not set, the value in log.retention.minutes is used. If set to -1, no time "
        "limit is applied.",
        at_least(-1),
        "log_retention_ms",
    ),
    _dynamic(
        "log.retention.minutes",
        _I,
        None,
        "The number of minutes to keep a log file before deleting it "
        "(in minutes), secondary to log.retention.ms property. If not set, the value in "
        "log.retention.hours is used",
        at_least(-1),
        "log_retention_minutes",
    ),
    _dynamic(
        "log.retention.hours",
        _I,
        "168",
        "The number of hours to keep a log file before deleting it (in "
        "hours), tertiary to log.retention.ms property",
        at_least(-1),
        "log_retention_hours",
    ),
    _dynamic(
        "log.segment.bytes",
        _I,
        "1073741824",
        "The maximum size of a single log file",
        at_least(1_048_576),
        "log_segment_bytes",
    ),
    _dynamic(
        "log.roll.ms",
        _L,
        None,
        "The maximum time before a new log segment is rolled out (in "
        "milliseconds). If not set, the value in log.roll.hours is used",
        at_least(1),
    ),
    _dynamic(
        "log.roll.hours",
        _I,
        "168",
        "The maximum time before a new log segment is rolled out (in hours), "
        "secondary to log.roll.ms property",
        at_least(1),
    ),
    _dynamic(
        "log.roll.jitter.ms",
        _L,
        None,
        "The maximum jitter to subtract from logRollTimeMillis (in "
        "milliseconds). If not set, the value in log.roll.jitter.hours is used",
        at_least(0),
    ),
    _dynamic(
        "log.roll.jitter.hours",
        _I,
        "0",
        "The maximum jitter to subtract from logRollTimeMillis (in "
        "hours), secondary to log.roll.jitter.ms property",
        at_least(0),
    ),
    _dynamic(
        "log.cleaner.delete.retention.ms",
        _L,
        "86400000",
        "The amount of time to retain tombstone message markers for log compacted topics.",
        at_least(0),
    ),
    _dynamic(
        "log.cleaner.min.compaction.lag.ms",
        _L,
        "0",
        "The minimum time a message will remain "
        "uncompacted in the log. Only applicable for logs that are being compacted.",
        at_least(0),
    ),
    _dynamic(
        "log.cleaner.max.compaction.lag.ms",
        _L,
        str(LONG_MAX),
        "The maximum time a message will remain "
        "ineligible for compaction in the log. Only applicable for logs that are being compacted.",
        at_least(1),
    ),
    _dynamic(
        "log.cleaner.min.cleanable.ratio",
        _D,
        "0.5",
        "The minimum ratio of dirty log to total log for a log to eligible for cleaning.",
        between(0, 1),
    ),
    _dynamic(
        "log.cleaner.threads",
        _I,
        "1",
        "The number of background threads to use for log cleaning",
        at_least(0),
    ),
    _dynamic(
        "log.cleaner.io.max.bytes.per.second",
        _D,
        "1.7976931348623157E308",
        "The log cleaner will be "
        "throttled so that the sum of its read and write i/o will be less than this value on average",
    ),
    _dynamic(
        "log.cleaner.backoff.ms",
        _L,
        "15000",
        "The amount of time to sleep when there are no logs to clean",
        at_least(0),
    ),
    _dynamic(
        "log.index.interval.bytes",
        _I,
        "4096",
        "The interval with which we add an entry to the offset index.",
        at_least(0),
    ),
    _dynamic(
        "log.index.size.max.bytes",
        _I,
        "10485760",
        "The maximum size in bytes of the offset index",
        at_least(4),
    ),
    _dynamic(
        "log.flush.interval.messages",
        _L,
        str(LONG_MAX),
        "The number of messages accumulated on a log partition before messages are flushed to disk.",
        at_least(1),
    ),
    _dynamic(
        "log.flush.interval.ms",
        _L,
        None,
        "The maximum time in ms that a message in any topic is kept in "
        "memory before flushed to disk. If not set, the value in log.flush.scheduler.interval.ms is used",
    ),
    _dynamic(
        "log.segment.delete.delay.ms",
        _L,
        "60000",
        "The amount of time to wait before deleting a file from the filesystem",
        at_least(0),
    ),
    _dynamic("log.preallocate", _B, "false", "Should pre allocate file when create new segment?"),
    _dynamic(
        "log.local.retention.ms",
        _L,
        "-2",
        "The number of milliseconds to keep the local log segments before it gets eligible for deletion.",
        at_least(-2),
    ),
    _dynamic(
        "log.local.retention.bytes",
        _L,
        "-2",
        "The maximum size of local log segments that can grow for "
        "a partition before it gets eligible for deletion.",
        at_least(-2),
    ),
    _dynamic(
        "log.message.timestamp.type",
        _S,
        "CreateTime",
        "Define whether the timestamp in the message is message create time or log append time.",
        one_of(("CreateTime", "LogAppendTime")),
    ),
    _dynamic(
        "log.message.timestamp.before.max.ms",
        _L,
        str(LONG_MAX),
        "This configuration sets the allowable "
        "timestamp difference between the broker's timestamp and the message timestamp.",
        at_least(0),
    ),
    _dynamic(
        "log.message.timestamp.after.max.ms",
        _L,
        "3600000",
        "This configuration sets the allowable "
        "timestamp difference between the message timestamp and the broker's timestamp.",
        at_least(0),
    ),
    _dynamic(
        "message.max.bytes",
        _I,
        "1048588",
        "The largest record batch size allowed by Kafka (after compression if compression is enabled).",
        at_least(0),
    ),
    _dynamic(
        "compression.type",
        _S,
        "producer",
        "Specify the final compression type for a given topic.",
        one_of(COMPRESSION_TYPES),
    ),
    _dynamic(
        "compression.gzip.level",
        _I,
        "-1",
        "The compression level to use if compression.type is set to gzip.",
        gzip_level,
    ),
    _dynamic(
        "compression.lz4.level",
        _I,
        "9",
        "The compression level to use if compression.type is set to lz4.",
        between(1, 17),
    ),
    _dynamic(
        "compression.zstd.level",
        _I,
        "3",
        "The compression level to use if compression.type is set to zstd.",
        between(-131072, 22),
    ),
    _dynamic(
        "min.insync.replicas",
        _I,
        "1",
        'When a producer sets acks to "all" (or "-1"), '
        "min.insync.replicas specifies the minimum number of replicas that must acknowledge a write for "
        "the write to be considered successful.",
        at_least(1),
    ),
    _dynamic(
        "unclean.leader.election.enable",
        _B,
        "false",
        "Indicates whether to enable replicas not in the "
        "ISR set to be elected as leader as a last resort, even though doing so may result in data loss",
    ),
)

#: name -> definition, in the order DescribeConfigs lists them
BROKER_CONFIGS: dict[str, ConfigDef] = {
    d.name: d for d in sorted(_DEFS + LISTENER_DEFS, key=lambda d: d.name)
}
