"""The `group.share.*` flags: Kafka's defaults, env variables, and Kafka's range checks at start."""

from __future__ import annotations

import argparse

import pytest

from groupcoord.server.config import add_serve_arguments, config_from_args


def parse(*argv: str, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    return config_from_args(parser.parse_args(list(argv)), env or {})


def test_defaults_are_kafkas() -> None:
    share = parse().share()
    assert (share.record_lock_duration_ms, share.delivery_count_limit, share.partition_max_record_locks) == (
        30000,
        5,
        2000,
    )
    assert (share.session_timeout_ms, share.heartbeat_interval_ms, share.max_size) == (45000, 5000, 200)
    assert share.max_share_sessions == 2000 and share.auto_offset_reset == "latest" and share.enable


def test_flags_and_env() -> None:
    cfg = parse(
        "--group-share-delivery-count-limit", "3", env={"GROUPCOORD_SHARE_AUTO_OFFSET_RESET": "earliest"}
    )
    assert cfg.share().delivery_count_limit == 3 and cfg.share().auto_offset_reset == "earliest"


@pytest.mark.parametrize(
    "argv",
    [
        ("--group-share-delivery-count-limit", "1"),
        ("--group-share-record-lock-duration-ms", "500"),
        ("--group-share-partition-max-record-locks", "99"),
        ("--group-share-max-size", "1001"),
        ("--share-auto-offset-reset", "by_duration:PT1H"),
        ("--group-share-heartbeat-interval-ms", "50000"),
    ],
)
def test_out_of_range_is_refused(argv: tuple[str, ...]) -> None:
    with pytest.raises(SystemExit):
        parse(*argv)
