"""Group configs: Kafka 4.3's `GroupConfig` for GROUP config resources (type 32), the per-group overrides of
the `group.consumer.*` and `group.share.*` broker configs, set with IncrementalAlterConfigs and shown by
DescribeConfigs.

Each group config has a broker synonym (its default) except `share.auto.offset.reset`,
`share.isolation.level` and `share.renew.acknowledge.enable`, whose default is `GroupConfig`'s own. Validation
is Kafka's `GroupConfig.validate`: the given values are merged over the broker's, every name must be known
(INVALID_CONFIG "Unknown group config name: x"), every value must parse and lie inside the broker's
`group.*.min/max.*` bounds, and each session timeout must exceed its heartbeat interval. groupcoord has no
`group.share.min/max.*` flags: the bounds are Kafka's defaults, widened to include the broker's own value so
that a broker started with, say, a 1 s record lock still accepts group configs (docs/differences.md).

The streams.* group configs are not defined: groupcoord has no streams groups (docs/differences.md). Pure:
no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from groupcoord.server.configs.resolve import ConfigEntry, Synonym
from groupcoord.server.configs.types import (
    ConfigDef,
    ConfigError,
    ConfigSource,
    ConfigType,
    Value,
    at_least,
    one_of,
    parse,
)

_I, _S, _B = ConfigType.INT, ConfigType.STRING, ConfigType.BOOLEAN
_DURATION = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$", re.IGNORECASE)


def parse_by_duration(text: str) -> int | None:
    """`by_duration:<ISO-8601 duration>` (PnDTnHnMn.nS, not negative) as milliseconds; None if malformed."""
    m = _DURATION.match(text.strip())
    if m is None or text.strip().upper() in ("P", "PT") or text.strip().upper().endswith("T"):
        return None
    d, h, mi, s = (m.group(i) for i in range(1, 5))
    total = int(d or 0) * 86400 + int(h or 0) * 3600 + int(mi or 0) * 60 + float(s or 0)
    return int(total * 1000)


def _auto_offset_reset(v: Value) -> str | None:
    """Kafka's `ShareGroupAutoOffsetResetStrategy.Validator`."""
    text = str(v).strip().lower()
    if text in ("earliest", "latest"):
        return None
    if text.startswith("by_duration:"):
        if parse_by_duration(str(v).strip()[len("by_duration:") :]) is None:
            return "Unable to parse duration string for by_duration"
        return None
    return (
        "Invalid value for share.auto.offset.reset. Valid values are earliest, latest, by_duration:<duration>"
    )


def _d(name: str, t: ConfigType, default: str, doc: str, check: object = None, broker: str = "") -> ConfigDef:
    synonyms = ((broker, 1),) if broker else ()
    return ConfigDef(name, t, default, doc, check, synonyms=synonyms, dynamic=True)  # type: ignore[arg-type]


GROUP_CONFIGS: dict[str, ConfigDef] = {
    d.name: d
    for d in (
        _d(
            "consumer.session.timeout.ms",
            _I,
            "45000",
            "The timeout to detect client failures when using the consumer group protocol.",
            at_least(1),
            "group.consumer.session.timeout.ms",
        ),
        _d(
            "consumer.heartbeat.interval.ms",
            _I,
            "5000",
            "The heartbeat interval given to the members of a consumer group.",
            at_least(1),
            "group.consumer.heartbeat.interval.ms",
        ),
        _d(
            "consumer.assignment.interval.ms",
            _I,
            "1000",
            "The interval between assignment updates for a consumer group.",
            at_least(0),
            "group.consumer.assignment.interval.ms",
        ),
        _d(
            "share.session.timeout.ms",
            _I,
            "45000",
            "The timeout to detect client failures when using the share group protocol.",
            at_least(1),
            "group.share.session.timeout.ms",
        ),
        _d(
            "share.heartbeat.interval.ms",
            _I,
            "5000",
            "The heartbeat interval given to the members of a share group.",
            at_least(1),
            "group.share.heartbeat.interval.ms",
        ),
        _d(
            "share.record.lock.duration.ms",
            _I,
            "30000",
            "The record acquisition lock duration in milliseconds for share groups.",
            at_least(1000),
            "group.share.record.lock.duration.ms",
        ),
        _d(
            "share.delivery.count.limit",
            _I,
            "5",
            "The maximum number of delivery attempts for a record delivered to a share group.",
            at_least(2),
            "group.share.delivery.count.limit",
        ),
        _d(
            "share.partition.max.record.locks",
            _I,
            "2000",
            "Share-group record lock limit per share-partition.",
            at_least(100),
            "group.share.partition.max.record.locks",
        ),
        _d(
            "share.auto.offset.reset",
            _S,
            "latest",
            "The strategy to initialize the share-partition start offset. earliest: automatically reset the "
            "offset to the earliest offset; latest: automatically reset the offset to the latest offset; "
            "by_duration:<duration>: automatically reset the offset to a configured duration from the current "
            "timestamp (ISO8601, PnDTnHnMn.nS, not negative); anything else: throw exception to the share "
            "consumer.",
            _auto_offset_reset,
        ),
        _d(
            "share.isolation.level",
            _S,
            "read_uncommitted",
            'Controls how to read records written transactionally. If set to "read_committed", the share group '
            "will only deliver transactional records which have been committed. If set to "
            '"read_uncommitted", the share group will return all messages, even transactional messages which '
            "have been aborted. Non-transactional records will be returned unconditionally in either mode.",
            one_of(("read_committed", "read_uncommitted")),
        ),
        _d(
            "share.renew.acknowledge.enable",
            _B,
            "true",
            "Whether the renew acknowledge type is enabled for the share group.",
        ),
        _d(
            "share.assignment.interval.ms",
            _I,
            "1000",
            "The interval between assignment updates for a share group.",
            at_least(0),
            "group.share.assignment.interval.ms",
        ),
        _d(
            "streams.session.timeout.ms",
            _I,
            "45000",
            "The timeout to detect client failures when using the streams group protocol.",
            at_least(1),
            "group.streams.session.timeout.ms",
        ),
        _d(
            "streams.heartbeat.interval.ms",
            _I,
            "5000",
            "The heartbeat interval given to the members of a streams group.",
            at_least(1),
            "group.streams.heartbeat.interval.ms",
        ),
        _d(
            "streams.num.standby.replicas",
            _I,
            "0",
            "The number of standby replicas for each task.",
            at_least(0),
            "group.streams.num.standby.replicas",
        ),
        _d(
            "streams.initial.rebalance.delay.ms",
            _I,
            "3000",
            "The amount of time the group coordinator will wait for more streams clients to join a new group "
            "before performing the first rebalance.",
            at_least(0),
            "group.streams.initial.rebalance.delay.ms",
        ),
        _d(
            "streams.assignment.interval.ms",
            _I,
            "1000",
            "The interval between assignment updates for a streams group.",
            at_least(0),
            "group.streams.assignment.interval.ms",
        ),
        _d(
            "streams.rack.aware.assignment.tags",
            _S,
            "",
            "The client tag keys used for rack-aware standby assignment (comma-separated, no duplicates).",
            None,
            "group.streams.rack.aware.assignment.tags",
        ),
    )
}


@dataclass(frozen=True, slots=True)
class GroupBounds:
    """The broker side of group configs: the broker values (the defaults a group config overrides, by broker
    config name, as text) and the (min, max) each group config must lie in (`group.*.min/max.*`)."""

    broker: Mapping[str, str]
    ranges: Mapping[str, tuple[int, int]]


def bounds(broker: Mapping[str, str], consumer_ranges: Mapping[str, tuple[int, int]]) -> GroupBounds:
    """Kafka's default bounds for the share configs (widened to the broker's value) plus the consumer ones
    given by the `--group-consumer-min/max-*` flags."""
    kafka = {
        "share.session.timeout.ms": (45000, 60000),
        "share.heartbeat.interval.ms": (5000, 15000),
        "share.record.lock.duration.ms": (15000, 60000),
        "share.delivery.count.limit": (2, 10),
        "share.partition.max.record.locks": (100, 4000),
        "share.assignment.interval.ms": (0, 15000),
    }
    ranges: dict[str, tuple[int, int]] = dict(consumer_ranges)
    for name, (lo, hi) in kafka.items():
        own = int(broker.get(GROUP_CONFIGS[name].synonyms[0][0], GROUP_CONFIGS[name].default or "0"))
        ranges[name] = (min(lo, own), max(hi, own))
    return GroupBounds(dict(broker), ranges)


#: the Kafka config names of the bounds, as its messages name them
_BOUND_NAMES = {
    "consumer.session.timeout.ms": "group.consumer.{}.session.timeout.ms",
    "consumer.heartbeat.interval.ms": "group.consumer.{}.heartbeat.interval.ms",
    "consumer.assignment.interval.ms": "group.consumer.{}.assignment.interval.ms",
    "share.session.timeout.ms": "group.share.{}.session.timeout.ms",
    "share.heartbeat.interval.ms": "group.share.{}.heartbeat.interval.ms",
    "share.record.lock.duration.ms": "group.share.{}.record.lock.duration.ms",
    "share.delivery.count.limit": "group.share.{}.delivery.count.limit",
    "share.partition.max.record.locks": "group.share.{}.partition.max.record.locks",
    "share.assignment.interval.ms": "group.share.{}.assignment.interval.ms",
}


def broker_value(name: str, b: GroupBounds) -> str | None:
    """The value a group without an override gets: the broker synonym's, else GroupConfig's default."""
    d = GROUP_CONFIGS[name]
    if d.synonyms:
        return b.broker.get(d.synonyms[0][0], d.default)
    return d.default


def check_group_configs(values: Mapping[str, str], b: GroupBounds) -> str | None:
    """Kafka's `GroupConfig.validate` over the broker values merged with `values`; the message of the
    InvalidConfigurationException (INVALID_CONFIG) it would throw, or None."""
    for name in values:
        if name not in GROUP_CONFIGS:
            return f"Unknown group config name: {name}"
    parsed: dict[str, Value] = {}
    for name, d in GROUP_CONFIGS.items():
        raw = values.get(name, broker_value(name, b))
        try:
            parsed[name] = parse(d, raw or "")
        except ConfigError as exc:
            return str(exc)
    for name, (lo, hi) in b.ranges.items():
        if name.endswith("assignment.interval.ms") and name not in values:
            continue  # Kafka checks an assignment interval only when the group sets it
        v = parsed[name]
        assert isinstance(v, int)
        if v < lo:
            return f"{name} must be greater than or equal to {_BOUND_NAMES[name].format('min')}"
        if v > hi:
            return f"{name} must be less than or equal to {_BOUND_NAMES[name].format('max')}"
    streams = _check_streams(values, b)
    if streams is not None:
        return streams
    for kind in ("consumer", "share"):
        if int(parsed[f"{kind}.session.timeout.ms"]) <= int(parsed[f"{kind}.heartbeat.interval.ms"]):  # type: ignore[call-overload]
            return f"{kind}.session.timeout.ms must be greater than {kind}.heartbeat.interval.ms"
    return None


def group_entries(overrides: Mapping[str, str], b: GroupBounds) -> list[ConfigEntry]:
    """Kafka's `createGroupConfigEntry` for every group config: the group's value (source GROUP_CONFIG) or
    the broker synonym's (static if given on the command line, else default), or GroupConfig's default."""
    out = []
    for name, d in GROUP_CONFIGS.items():
        chain: list[Synonym] = []
        if name in overrides:
            chain.append(Synonym(name, overrides[name], ConfigSource.GROUP_CONFIG))
        if d.synonyms:
            broker_name = d.synonyms[0][0]
            if broker_name in b.broker and b.broker[broker_name] != d.default:
                chain.append(Synonym(broker_name, b.broker[broker_name], ConfigSource.STATIC_BROKER_CONFIG))
            chain.append(Synonym(broker_name, d.default, ConfigSource.DEFAULT_CONFIG))
        else:
            chain.append(Synonym(name, d.default, ConfigSource.DEFAULT_CONFIG))
        value = chain[0].value
        out.append(ConfigEntry(name, value, chain[0].source, False, False, tuple(chain), d.type, d.doc))
    return out


#: Kafka 4.4's bounds of the streams group configs (`group.streams.min/max.*` defaults); checked only when the
#: group sets the config, with Kafka 4.4's messages (`GroupConfig.validateIntRange`/`validateIntMax`)
STREAMS_RANGES = {
    "streams.heartbeat.interval.ms": (5000, 15000),
    "streams.session.timeout.ms": (45000, 60000),
    "streams.num.standby.replicas": (None, 2),
    "streams.assignment.interval.ms": (0, 15000),
}


def _check_streams(values: Mapping[str, str], b: GroupBounds) -> str | None:
    for name, (lo, hi) in STREAMS_RANGES.items():
        if name not in values:
            continue
        own = int(broker_value(name, b) or 0)
        v = int(values[name])
        if lo is None:
            if v > max(hi, own):
                return f"{name} must be less than or equal to {max(hi, own)}"
        elif not min(lo, own) <= v <= max(hi, own):
            return f"{name} must be in the range {min(lo, own)} to {max(hi, own)} inclusive."
    tags = values.get("streams.rack.aware.assignment.tags")
    if tags is not None:
        keys = [t.strip() for t in tags.split(",") if t.strip()]
        if len(keys) != len(set(keys)):
            return "streams.rack.aware.assignment.tags must not contain duplicate tag keys."
    return None
