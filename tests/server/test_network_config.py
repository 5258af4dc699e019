"""The connection limits of issue 11 as flags and GROUPCOORD_* variables, with Kafka's defaults."""

from __future__ import annotations

import argparse

import pytest

from groupcoord.server.config import add_serve_arguments, config_from_args


def parse(argv: list[str], env: dict[str, str]):  # type: ignore[no-untyped-def]
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    return config_from_args(parser.parse_args(argv), env)


def test_defaults_are_kafkas() -> None:
    cfg = parse([], {})
    assert cfg.connections_max_idle_ms == 600000  # connections.max.idle.ms
    assert cfg.max_connections_per_ip == 2**31 - 1  # max.connections.per.ip
    assert cfg.max_connections == 2**31 - 1  # max.connections
    assert cfg.request_frame_timeout_ms == 30000


def test_flags_beat_the_environment() -> None:
    env = {"GROUPCOORD_MAX_CONNECTIONS_PER_IP": "7", "GROUPCOORD_CONNECTIONS_MAX_IDLE_MS": "1000"}
    cfg = parse(["--max-connections-per-ip", "9", "--max-connections", "50"], env)
    assert (cfg.max_connections_per_ip, cfg.connections_max_idle_ms, cfg.max_connections) == (9, 1000, 50)
    cfg = parse([], {"GROUPCOORD_REQUEST_FRAME_TIMEOUT_MS": "2500"})
    assert cfg.request_frame_timeout_ms == 2500


@pytest.mark.parametrize(
    "flag",
    [
        "--connections-max-idle-ms",
        "--request-frame-timeout-ms",
        "--max-connections-per-ip",
        "--max-connections",
    ],
)
def test_limits_below_one_are_refused(flag: str) -> None:
    with pytest.raises(SystemExit, match=flag):
        parse([flag, "0"], {})
