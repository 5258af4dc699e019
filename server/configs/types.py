"""How one config is defined and parsed: Kafka's `ConfigDef` reduced to what DescribeConfigs and the alter
APIs need (type, default, documentation, validator, synonyms), with Kafka's error texts so that a client sees
the same INVALID_CONFIG message it would from a Kafka broker."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum

LONG_MAX = 9_223_372_036_854_775_807
INT_MAX = 2_147_483_647


class ConfigType(IntEnum):
    """DescribeConfigs v3+ ConfigType (`DescribeConfigsResponse.ConfigType`)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(IntEnum):
    """DescribeConfigs v1+ ConfigSource (`DescribeConfigsResponse.ConfigSource`)."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


class ResourceType(IntEnum):
    """`ConfigResource.Type` ids on the wire."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


class ConfigError(ValueError):
    """A value Kafka's ConfigDef would refuse; `str()` is Kafka's message."""


Value = bool | int | float | str | tuple[str, ...]
Check = Callable[[Value], str | None]


@dataclass(frozen=True, slots=True)
class ConfigDef:
    name: str
    type: ConfigType
    #: Kafka's default as the text DescribeConfigs shows; None where Kafka has no default (shown as null)
    default: str | None
    doc: str
    check: Check | None = None
    #: topic configs: the broker configs that supply the default, in Kafka's order, with the factor that turns
    #: the broker value into this config's unit (log.retention.hours -> retention.ms: 3600000)
    synonyms: tuple[tuple[str, int], ...] = ()
    #: broker configs: may be changed at run time (AlterConfigs); the rest are read-only
    dynamic: bool = False
    #: broker configs: the `ServerConfig` attribute holding the command-line (static) value, if any
    attr: str | None = None
    sensitive: bool = field(default=False)


def parse(d: ConfigDef, raw: str) -> Value:
    """Kafka's `ConfigDef.parseType` then the validator; raises ConfigError with Kafka's message."""
    text = raw.strip()
    problem: str | None
    value: Value
    try:
        if d.type == ConfigType.BOOLEAN:
            low = text.lower()
            if low not in ("true", "false"):
                raise ConfigError(
                    f"Invalid value {raw} for configuration {d.name}: Expected value to be either "
                    "true or false"
                )
            value = low == "true"
        elif d.type in (ConfigType.INT, ConfigType.SHORT, ConfigType.LONG):
            value = int(text)
            limit = (
                INT_MAX if d.type == ConfigType.INT else (32767 if d.type == ConfigType.SHORT else LONG_MAX)
            )
            if not -limit - 1 <= value <= limit:
                raise ValueError
        elif d.type == ConfigType.DOUBLE:
            value = float(text)
        elif d.type == ConfigType.LIST:
            value = tuple(p.strip() for p in text.split(",")) if text else ()
        else:
            value = text
    except ConfigError:
        raise
    except ValueError:
        raise ConfigError(
            f"Invalid value {raw} for configuration {d.name}: Not a number of type {d.type.name}"
        ) from None
    if d.check is not None and (problem := d.check(value)) is not None:
        raise ConfigError(f"Invalid value {raw} for configuration {d.name}: {problem}")
    return value


def at_least(low: float) -> Check:
    def check(v: Value) -> str | None:
        return f"Value must be at least {low}" if isinstance(v, int | float) and v < low else None

    return check


def between(low: float, high: float) -> Check:
    def check(v: Value) -> str | None:
        if isinstance(v, int | float):
            if v < low:
                return f"Value must be at least {low}"
            if v > high:
                return f"Value must be no more than {high}"
        return None

    return check


def one_of(options: Sequence[str]) -> Check:
    def check(v: Value) -> str | None:
        return None if v in options else f"String must be one of: {', '.join(options)}"

    return check


def list_of(options: Sequence[str], allow_empty: bool = False) -> Check:
    def check(v: Value) -> str | None:
        items = v if isinstance(v, tuple) else (str(v),)
        if not items and not allow_empty:
            return "Empty list not allowed"
        bad = [i for i in items if i not in options]
        return f"String must be one of: {', '.join(options)}" if bad else None

    return check


def gzip_level(v: Value) -> str | None:
    if isinstance(v, int) and v != -1 and not 1 <= v <= 9:
        return "Value must be -1 or between 1 and 9"
    return None
