"""Client metrics configs: Kafka 4.4's `ClientMetricsConfigs` for CLIENT_METRICS config resources (type 16,
KIP-714 subscriptions), set with IncrementalAlterConfigs/AlterConfigs and shown by DescribeConfigs.

A subscription is a name with three configs: `metrics` (metric name prefixes, a list), `interval.ms` (push
interval, 100 ms to 1 h) and `match` (client selectors `name=regex`, a list). Validation is Kafka's
`ClientMetricsConfigs.validate`: an empty name or an unknown config is INVALID_REQUEST, an interval out of
range INVALID_REQUEST, a bad list (duplicates, empty items) or an unparsable interval INVALID_CONFIG, a bad
match pattern INVALID_CONFIG "Illegal client matching pattern: ...". Regexes are checked with Python's `re`
(Kafka: java.util.regex; the two differ at the edges, docs/differences.md). groupcoord stores and describes
subscriptions; it does not serve GetTelemetrySubscriptions/PushTelemetry (docs/differences.md). Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.configs.resolve import ConfigEntry, Synonym
from groupcoord.server.configs.types import (
    Check,
    ConfigDef,
    ConfigError,
    ConfigSource,
    ConfigType,
    Value,
    parse,
)

MIN_INTERVAL_MS, MAX_INTERVAL_MS = 100, 3_600_000
#: the selectors a `match` entry may name (`ClientMetricsConfigs.ALLOWED_MATCH_PARAMS`)
MATCH_PARAMS = frozenset(
    (
        "client_instance_id",
        "client_id",
        "client_software_name",
        "client_software_version",
        "client_source_address",
        "client_source_port",
    )
)


def _distinct_items(name: str) -> Check:
    """`ConfigDef.ValidList.anyNonDuplicateValues(true, false)`: empty allowed, no duplicates, no empty item."""

    def check(v: Value) -> str | None:
        items = v if isinstance(v, tuple) else (str(v),)
        if len(set(items)) != len(items):
            return f"Configuration '{name}' values must not be duplicated."
        if any(i == "" for i in items):
            return f"Configuration '{name}' values must not be empty."
        return None

    return check


CLIENT_METRICS_CONFIGS: dict[str, ConfigDef] = {
    d.name: d
    for d in (
        ConfigDef("interval.ms", ConfigType.INT, "300000", "Metrics push interval in milliseconds"),
        ConfigDef("match", ConfigType.LIST, "", "Client match criteria", _distinct_items("match")),
        ConfigDef(
            "metrics", ConfigType.LIST, "", "Telemetry metric name prefix list", _distinct_items("metrics")
        ),
    )
}

Refusal = tuple[ErrorCode, str]


def _list_items(raw: str) -> tuple[str, ...]:
    """ConfigDef's LIST parse: trimmed, split on commas with the whitespace around them, empty items kept."""
    text = raw.strip()
    return tuple(re.split(r"\s*,\s*", text)) if text else ()


def dedup_lists(values: Mapping[str, str]) -> dict[str, str]:
    """A list config's repeated items dropped, first kept (Kafka 4.4 stores `metrics=a,a` as `a`, KIP-1161)."""
    out = dict(values)
    for name, raw in values.items():
        d = CLIENT_METRICS_CONFIGS.get(name)
        if d is not None and d.type == ConfigType.LIST:
            out[name] = ",".join(dict.fromkeys(_list_items(raw)))
    return out


def _parse(d: ConfigDef, raw: str) -> Value:
    """`parse`, but LIST items as Kafka splits them (an empty item is kept, so the validator can refuse it)."""
    if d.type != ConfigType.LIST:
        return parse(d, raw)
    value = _list_items(raw)
    if d.check is not None and (problem := d.check(value)) is not None:
        raise ConfigError(problem)
    return value


def _java_split(text: str, sep: str) -> list[str]:
    """Java's `String.split`: trailing empty strings are removed."""
    parts = text.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def check_match(patterns: tuple[str, ...]) -> str | None:
    """`ClientMetricsConfigs.parseMatchingPatterns`: each `param=regex` names a known selector and compiles."""
    for pattern in patterns:
        pair = _java_split(pattern, "=")
        if len(pair) != 2 or pair[0].strip() not in MATCH_PARAMS:
            return f"Illegal client matching pattern: {pattern}"
        try:
            re.compile(pair[1].strip())
        except re.error:
            return f"Illegal client matching pattern: {pattern}"
    return None


def check_client_metrics_configs(name: str, values: Mapping[str, str]) -> Refusal | None:
    """Kafka's `ClientMetricsConfigs.validate` on a subscription's new configs."""
    if not name:
        return ErrorCode.INVALID_REQUEST, "Subscription name can't be empty"
    for key in values:
        if key not in CLIENT_METRICS_CONFIGS:
            return ErrorCode.INVALID_REQUEST, f"Unknown client metrics configuration: {key}"
    parsed: dict[str, Value] = {}
    for key, raw in values.items():
        try:
            parsed[key] = _parse(CLIENT_METRICS_CONFIGS[key], raw)
        except ConfigError as exc:
            return ErrorCode.INVALID_CONFIG, str(exc)
    interval = parsed.get("interval.ms")
    if isinstance(interval, int) and not MIN_INTERVAL_MS <= interval <= MAX_INTERVAL_MS:
        return (
            ErrorCode.INVALID_REQUEST,
            f"Invalid value {interval} for interval.ms, interval must be between 100 and 3600000 (1 hour)",
        )
    match = parsed.get("match")
    if isinstance(match, tuple) and (problem := check_match(match)) is not None:
        return ErrorCode.INVALID_CONFIG, problem
    return None


def _shown(d: ConfigDef, raw: str) -> str:
    """`ConfigDef.convertToString` of the parsed value: lists joined by commas, numbers as Java prints them."""
    if d.type == ConfigType.LIST:
        return ",".join(_list_items(raw))
    return str(int(raw.strip())) if d.type == ConfigType.INT else raw


def client_metrics_entries(overrides: Mapping[str, str]) -> list[ConfigEntry]:
    """Kafka's `createClientMetricsConfigEntry` for every config, in name order: the subscription's value
    (source CLIENT_METRICS_CONFIG, itself its one synonym) or the default (DEFAULT_CONFIG, no synonyms)."""
    out = []
    for name, d in sorted(CLIENT_METRICS_CONFIGS.items()):
        if name in overrides:
            value = _shown(d, overrides[name])
            chain: tuple[Synonym, ...] = (Synonym(name, value, ConfigSource.CLIENT_METRICS_CONFIG),)
            source = ConfigSource.CLIENT_METRICS_CONFIG
        else:
            value, chain, source = d.default or "", (), ConfigSource.DEFAULT_CONFIG
        out.append(ConfigEntry(name, value, source, False, False, chain, d.type, d.doc))
    return out
