"""The listener configs a BROKER DescribeConfigs lists (issue 30 item 16), with their values from the command
line: `--listeners`/`--advertised-listeners`/`--listener-security-protocol-map`, or the `--host/--port`
shorthand spelled as the one PLAINTEXT listener it is."""

from __future__ import annotations

from groupcoord.server.config import ServerConfig
from groupcoord.server.configs.broker_defs import BROKER_CONFIGS
from groupcoord.server.configs.manager import check_static_broker_values, static_broker_values
from groupcoord.server.configs.resolve import BrokerLayers, broker_entry
from groupcoord.server.configs.types import ConfigSource

NAMES = ("listeners", "advertised.listeners", "listener.security.protocol.map", "inter.broker.listener.name")


def entries(cfg: ServerConfig) -> dict[str, tuple[str | None, ConfigSource, bool]]:
    static = static_broker_values(cfg)
    assert check_static_broker_values(static) == []  # Kafka would start with these values
    layers = BrokerLayers({}, {}, static)
    out = {}
    for name in NAMES:
        e = broker_entry(BROKER_CONFIGS[name], layers)
        out[name] = (e.value, e.source, e.read_only)
    return out


def test_the_shorthand_is_one_plaintext_listener() -> None:
    assert entries(ServerConfig(host="10.0.0.5", port=9093)) == {
        "listeners": ("PLAINTEXT://10.0.0.5:9093", ConfigSource.STATIC_BROKER_CONFIG, True),
        "advertised.listeners": (None, ConfigSource.DEFAULT_CONFIG, True),
        "listener.security.protocol.map": (
            "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
            ConfigSource.DEFAULT_CONFIG,
            True,
        ),
        "inter.broker.listener.name": (None, ConfigSource.DEFAULT_CONFIG, True),
    }
    advertised = entries(ServerConfig(host="0.0.0.0", port=9092, advertised_host="kafka.example"))
    assert advertised["advertised.listeners"][:2] == (
        "PLAINTEXT://kafka.example:9092",
        ConfigSource.STATIC_BROKER_CONFIG,
    )


def test_kafka_style_listeners_are_shown_as_given() -> None:
    cfg = ServerConfig(
        listeners="INTERNAL://0.0.0.0:9092,EXTERNAL://:19092",
        advertised_listeners="INTERNAL://kafka:9092,EXTERNAL://localhost:19092",
        listener_security_protocol_map="INTERNAL:PLAINTEXT,EXTERNAL:SASL_SSL",
    )
    got = entries(cfg)
    assert got["listeners"][:2] == (
        "INTERNAL://0.0.0.0:9092,EXTERNAL://:19092",
        ConfigSource.STATIC_BROKER_CONFIG,
    )
    assert got["advertised.listeners"][0] == "INTERNAL://kafka:9092,EXTERNAL://localhost:19092"
    assert got["listener.security.protocol.map"][:2] == (
        "INTERNAL:PLAINTEXT,EXTERNAL:SASL_SSL",
        ConfigSource.STATIC_BROKER_CONFIG,
    )
    assert all(d.doc for d in (BROKER_CONFIGS[n] for n in NAMES))
