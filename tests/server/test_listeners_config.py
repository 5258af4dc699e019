"""`--listeners`, `--advertised-listeners`, `--listener-security-protocol-map`: Kafka's format and checks."""

from __future__ import annotations

import argparse

import pytest

from groupcoord.server.config import add_serve_arguments, config_from_args
from groupcoord.server.net.listeners import ListenerError, build_listeners


def config(argv: list[str], env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    return config_from_args(parser.parse_args(argv), env or {})


def test_two_named_listeners_with_a_protocol_map_and_advertised_addresses() -> None:
    cfg = config(
        [
            "--listeners", "INTERNAL://0.0.0.0:9092,EXTERNAL://127.0.0.1:19092",
            "--advertised-listeners", "INTERNAL://coordinator:9092,EXTERNAL://localhost:19092",
            "--listener-security-protocol-map", "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
        ]
    )  # fmt: skip
    internal, external = cfg.listener_list()
    assert (internal.name, internal.host, internal.port) == ("INTERNAL", "0.0.0.0", 9092)
    assert (internal.advertised_host, internal.advertised_port) == ("coordinator", 9092)
    assert (external.advertised_host, external.advertised_port, external.protocol) == (
        "localhost",
        19092,
        "PLAINTEXT",
    )


def test_listeners_come_from_groupcoord_env_vars_too() -> None:
    cfg = config([], {"GROUPCOORD_LISTENERS": "PLAINTEXT://127.0.0.1:9300"})
    (only,) = cfg.listener_list()
    assert (only.name, only.protocol, only.advertised_host, only.advertised_port) == (
        "PLAINTEXT",
        "PLAINTEXT",
        "127.0.0.1",
        9300,
    )


def test_old_host_and_port_flags_are_one_plaintext_listener() -> None:
    cfg = config(
        ["--host", "0.0.0.0", "--port", "9400", "--advertised-host", "kafka", "--advertised-port", "19400"]
    )
    (only,) = cfg.listener_list()
    assert (only.name, only.protocol, only.host, only.port) == ("PLAINTEXT", "PLAINTEXT", "0.0.0.0", 9400)
    assert (only.advertised_host, only.advertised_port) == ("kafka", 19400)


@pytest.mark.parametrize(
    ("listeners", "advertised", "mapping", "message"),
    [
        ("A://127.0.0.1:1,A://127.0.0.1:2", None, "A:PLAINTEXT", "different name"),
        ("A://127.0.0.1:1,B://127.0.0.1:1", None, "A:PLAINTEXT,B:PLAINTEXT", "different port"),
        ("INTERNAL://127.0.0.1:1", None, None, "no security protocol for listener INTERNAL"),
        ("PLAINTEXT://127.0.0.1:1", "OTHER://h:1", None, "OTHER is not one of the listeners"),
        ("PLAINTEXT://0.0.0.0:1", None, None, "non-routable meta-address"),
        ("PLAINTEXT:/127.0.0.1:1", None, None, "not NAME://host:port"),
        ("A://127.0.0.1:1", None, "A:TLS", "is not one of PLAINTEXT"),
        ("PLAINTEXT://127.0.0.1:70000", None, None, "out of range"),
    ],
)
def test_listener_settings_kafka_refuses_are_refused(
    listeners: str, advertised: str | None, mapping: str | None, message: str
) -> None:
    with pytest.raises(ListenerError, match=message):
        build_listeners(listeners, advertised, mapping)


def test_a_bad_listener_setting_stops_the_server_with_its_reason() -> None:
    with pytest.raises(SystemExit, match="no security protocol for listener INTERNAL"):
        config(["--listeners", "INTERNAL://127.0.0.1:9092"])
