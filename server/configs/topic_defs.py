"""Kafka's topic-level configs (4.x `LogConfig`): names, types, defaults, validators, documentation and the
broker configs each takes its default from (`LogConfig.TOPIC_CONFIG_SYNONYMS`)."""

from __future__ import annotations

from groupcoord.server.configs.types import (
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
HOUR_MS = 3_600_000
MINUTE_MS = 60_000
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

_DEFS = (
    ConfigDef(
        "cleanup.policy",
        _LIST,
        "delete",
        'A string that is either "delete" or "compact" or both. This string designates the retention policy to '
        'use on old log segments. The default policy ("delete") will discard old segments when their retention '
        'time or size limit has been reached. The "compact" setting will enable log compaction on the topic.',
        list_of(("compact", "delete"), allow_empty=True),
        (("log.cleanup.policy", 1),),
    ),
    ConfigDef(
        "compression.gzip.level",
        _I,
        "-1",
        "The compression level to use if compression.type is set to gzip.",
        gzip_level,
        (("compression.gzip.level", 1),),
    ),
    ConfigDef(
        "compression.lz4.level",
        _I,
        "9",
        "The compression level to use if compression.type is set to lz4.",
        between(1, 17),
        (("compression.lz4.level", 1),),
    ),
    ConfigDef(
        "compression.type",
        _S,
        "producer",
        "Specify the final compression type for a given topic. This configuration accepts the standard "
        "compression codecs ('gzip', 'snappy', 'lz4', 'zstd'). It additionally accepts 'uncompressed' which is "
        "equivalent to no compression; and 'producer' which means retain the original compression codec set by "
        "the producer.",
        one_of(COMPRESSION_TYPES),
        (("compression.type", 1),),
    ),
    ConfigDef(
        "compression.zstd.level",
        _I,
        "3",
        "The compression level to use if compression.type is set to zstd.",
        between(-131072, 22),
        (("compression.zstd.level", 1),),
    ),
    ConfigDef(
        "delete.retention.ms",
        _L,
        "86400000",
        "The amount of time to retain delete tombstone markers for log compacted topics. This setting also gives "
        "a bound on the time in which a consumer must complete a read if they begin from offset 0 to ensure that "
        "they get a valid snapshot of the final stage (otherwise delete tombstones may be collected before they "
        "complete their scan).",
        at_least(0),
        (("log.cleaner.delete.retention.ms", 1),),
    ),
    ConfigDef(
        "file.delete.delay.ms",
        _L,
        "60000",
        "The time to wait before deleting a file from the filesystem",
        at_least(0),
        (("log.segment.delete.delay.ms", 1),),
    ),
    ConfigDef(
        "flush.messages",
        _L,
        str(LONG_MAX),
        "This setting allows specifying an interval at which we will force an fsync of data written to the log. "
        "For example if this was set to 1 we would fsync after every message; if it were 5 we would fsync after "
        "every five messages. In general we recommend you not set this and use replication for durability and "
        "allow the operating system's background flush capabilities as it is more efficient.",
        at_least(1),
        (("log.flush.interval.messages", 1),),
    ),
    ConfigDef(
        "flush.ms",
        _L,
        str(LONG_MAX),
        "This setting allows specifying a time interval at which we will force an fsync of data written to the "
        "log. For example if this was set to 1000 we would fsync after 1000 ms had passed. In general we "
        "recommend you not set this and use replication for durability and allow the operating system's "
        "background flush capabilities as it is more efficient.",
        at_least(0),
        (("log.flush.interval.ms", 1),),
    ),
    ConfigDef(
        "follower.replication.throttled.replicas",
        _LIST,
        "",
        "A list of replicas for which log replication should be throttled on the follower side. The list should "
        "describe a set of replicas in the form [PartitionId]:[BrokerId],[PartitionId]:[BrokerId]:... or "
        "alternatively the wildcard '*' can be used to throttle all replicas for this topic.",
    ),
    ConfigDef(
        "index.interval.bytes",
        _I,
        "4096",
        "This setting controls how frequently Kafka adds an index entry to its offset index. The default setting "
        "ensures that we index a message roughly every 4096 bytes. More indexing allows reads to jump closer to "
        "the exact position in the log but makes the index larger. You probably don't need to change this.",
        at_least(0),
        (("log.index.interval.bytes", 1),),
    ),
    ConfigDef(
        "leader.replication.throttled.replicas",
        _LIST,
        "",
        "A list of replicas for which log replication should be throttled on the leader side. The list should "
        "describe a set of replicas in the form [PartitionId]:[BrokerId],[PartitionId]:[BrokerId]:... or "
        "alternatively the wildcard '*' can be used to throttle all replicas for this topic.",
    ),
    ConfigDef(
        "local.retention.bytes",
        _L,
        "-2",
        "The maximum size of local log segments that can grow for a partition before it deletes the old "
        "segments. Default value is -2, it represents `retention.bytes` value to be used.",
        at_least(-2),
        (("log.local.retention.bytes", 1),),
    ),
    ConfigDef(
        "local.retention.ms",
        _L,
        "-2",
        "The number of milliseconds to keep the local log segment before it gets deleted. Default value is -2, "
        "it represents `retention.ms` value is to be used.",
        at_least(-2),
        (("log.local.retention.ms", 1),),
    ),
    ConfigDef(
        "max.compaction.lag.ms",
        _L,
        str(LONG_MAX),
        "The maximum time a message will remain ineligible for compaction in the log. Only applicable for logs "
        "that are being compacted.",
        at_least(1),
        (("log.cleaner.max.compaction.lag.ms", 1),),
    ),
    ConfigDef(
        "max.message.bytes",
        _I,
        "1048588",
        "The largest record batch size allowed by Kafka (after compression if compression is enabled).",
        at_least(0),
        (("message.max.bytes", 1),),
    ),
    ConfigDef(
        "message.timestamp.after.max.ms",
        _L,
        "3600000",
        "This configuration sets the allowable timestamp difference between the message timestamp and the "
        "broker's timestamp. The message timestamp can be later than or equal to the broker's timestamp, with "
        "the maximum allowable difference determined by the value set in this configuration. If "
        "message.timestamp.type=CreateTime, the message will be rejected if the difference in timestamps "
        "exceeds this specified threshold. This configuration is ignored if message.timestamp.type=LogAppendTime.",
        at_least(0),
        (("log.message.timestamp.after.max.ms", 1),),
    ),
    ConfigDef(
        "message.timestamp.before.max.ms",
        _L,
        str(LONG_MAX),
        "This configuration sets the allowable timestamp difference between the broker's timestamp and the "
        "message timestamp. The message timestamp can be earlier than or equal to the broker's timestamp, with "
        "the maximum allowable difference determined by the value set in this configuration. If "
        "message.timestamp.type=CreateTime, the message will be rejected if the difference in timestamps "
        "exceeds this specified threshold. This configuration is ignored if message.timestamp.type=LogAppendTime.",
        at_least(0),
        (("log.message.timestamp.before.max.ms", 1),),
    ),
    ConfigDef(
        "message.timestamp.type",
        _S,
        "CreateTime",
        "Define whether the timestamp in the message is message create time or log append time.",
        one_of(("CreateTime", "LogAppendTime")),
        (("log.message.timestamp.type", 1),),
    ),
    ConfigDef(
        "min.cleanable.dirty.ratio",
        _D,
        "0.5",
        "This configuration controls how frequently the log compactor will attempt to clean the log (assuming "
        "log compaction is enabled). By default we will avoid cleaning a log where more than 50% of the log has "
        "been compacted. This ratio bounds the maximum space wasted in the log by duplicates (at 50% at most 50% "
        "of the log could be duplicates). A higher ratio will mean fewer, more efficient cleanings but will mean "
        "more wasted space in the log. If the max.compaction.lag.ms or the min.compaction.lag.ms configurations "
        "are also specified, then the log compactor considers the log to be eligible for compaction as soon as "
        "either: (i) the dirty ratio threshold has been met and the log has had dirty (uncompacted) records for "
        "at least the min.compaction.lag.ms duration, or (ii) if the log has had dirty (uncompacted) records for "
        "at most the max.compaction.lag.ms period.",
        between(0, 1),
        (("log.cleaner.min.cleanable.ratio", 1),),
    ),
    ConfigDef(
        "min.compaction.lag.ms",
        _L,
        "0",
        "The minimum time a message will remain uncompacted in the log. Only applicable for logs that are being "
        "compacted.",
        at_least(0),
        (("log.cleaner.min.compaction.lag.ms", 1),),
    ),
    ConfigDef(
        "min.insync.replicas",
        _I,
        "1",
        'When a producer sets acks to "all" (or "-1"), this configuration specifies the minimum number of '
        "replicas that must acknowledge a write for the write to be considered successful. If this minimum "
        "cannot be met, then the producer will raise an exception (either NotEnoughReplicas or "
        "NotEnoughReplicasAfterAppend).",
        at_least(1),
        (("min.insync.replicas", 1),),
    ),
    ConfigDef(
        "preallocate",
        _B,
        "false",
        "True if we should preallocate the file on disk when creating a new log segment.",
        None,
        (("log.preallocate", 1),),
    ),
    ConfigDef(
        "remote.log.copy.disable",
        _B,
        "false",
        "Determines whether tiered data for a topic should become read only, and no more data uploading on a "
        "topic.",
    ),
    ConfigDef(
        "remote.log.delete.on.disable",
        _B,
        "false",
        "Determines whether tiered data for a topic should be deleted after tiered storage is disabled on a "
        "topic.",
    ),
    ConfigDef(
        "remote.storage.enable",
        _B,
        "false",
        "To enable tiered storage for a topic, set this configuration as true. You can not disable this config "
        "once it is enabled.",
    ),
    ConfigDef(
        "retention.bytes",
        _L,
        "-1",
        "This configuration controls the maximum size a partition (which consists of log segments) can grow to "
        'before we will discard old log segments to free up space if we are using the "delete" retention '
        "policy. By default there is no size limit only a time limit. Since this limit is enforced at the "
        "partition level, multiply it by the number of partitions to compute the topic retention in bytes.",
        None,
        (("log.retention.bytes", 1),),
    ),
    ConfigDef(
        "retention.ms",
        _L,
        "604800000",
        "This configuration controls the maximum time we will retain a log before we will discard old log "
        'segments to free up space if we are using the "delete" retention policy. This represents an SLA on how '
        "soon consumers must read their data. If set to -1, no time limit is applied.",
        at_least(-1),
        (("log.retention.ms", 1), ("log.retention.minutes", MINUTE_MS), ("log.retention.hours", HOUR_MS)),
    ),
    ConfigDef(
        "segment.bytes",
        _I,
        "1073741824",
        "This configuration controls the segment file size for the log. Retention and cleaning is always done a "
        "file at a time so a larger segment size means fewer files but less granular control over retention.",
        at_least(1_048_576),
        (("log.segment.bytes", 1),),
    ),
    ConfigDef(
        "segment.index.bytes",
        _I,
        "10485760",
        "This configuration controls the size of the index that maps offsets to file positions. We preallocate "
        "this index file and shrink it only after log rolls. You generally should not need to change this "
        "setting.",
        at_least(4),
        (("log.index.size.max.bytes", 1),),
    ),
    ConfigDef(
        "segment.jitter.ms",
        _L,
        "0",
        "The maximum random jitter subtracted from the scheduled segment roll time to avoid thundering herds of "
        "segment rolling",
        at_least(0),
        (("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", HOUR_MS)),
    ),
    ConfigDef(
        "segment.ms",
        _L,
        "604800000",
        "This configuration controls the period of time after which Kafka will force the log to roll even if "
        "the segment file isn't full to ensure that retention can delete or compact old data.",
        at_least(1),
        (("log.roll.ms", 1), ("log.roll.hours", HOUR_MS)),
    ),
    ConfigDef(
        "unclean.leader.election.enable",
        _B,
        "false",
        "Indicates whether to enable replicas not in the ISR set to be elected as leader as a last resort, even "
        "though doing so may result in data loss.",
        None,
        (("unclean.leader.election.enable", 1),),
    ),
)

#: name -> definition, in Kafka's (alphabetical) order
TOPIC_CONFIGS: dict[str, ConfigDef] = {d.name: d for d in _DEFS}
