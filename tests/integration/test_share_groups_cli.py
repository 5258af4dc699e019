"""`groupcoord share-groups` as a subprocess against the real server and a confluent-kafka ShareConsumer group:
kafka-share-groups.sh's list, describe (offsets, members, state), reset-offsets, delete-offsets and delete,
their columns, effects and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import pytest
from confluent_kafka import ShareConsumer

from tests.conftest import ROOT

from .test_share_confluent import produce

pytestmark = [pytest.mark.integration, pytest.mark.owns_server]


def cli(bootstrap: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "groupcoord.server", "share-groups", "--bootstrap-server", bootstrap, *args],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def rows(bootstrap: str, *args: str) -> list[dict[str, Any]]:
    done = cli(bootstrap, "--output", "json", *args)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def offsets(bootstrap: str, group: str) -> dict[tuple[str, int], tuple[Any, Any]]:
    return {
        (r["topic"], r["partition"]): (r["start_offset"], r["lag"])
        for r in rows(bootstrap, "describe", "--group", group)
    }


def consume(bootstrap: str, group: str, n: int) -> tuple[ShareConsumer, list[int]]:
    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
    c.subscribe(["t"])
    got: list[int] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(got) < n:
        got += [int(m.value()) for m in c.poll(1.0) or [] if m.error() is None]
    return c, got


def wait_state(bootstrap: str, group: str, state: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if [r["state"] for r in rows(bootstrap, "describe", "--group", group, "--state")] == [state]:
            return
        time.sleep(0.5)
    raise AssertionError(f"{group} never became {state}")


def test_share_groups_cli_against_a_share_consumer_group(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory("--topic", "t:1", "--share-auto-offset-reset", "earliest")
    bs = srv.bootstrap
    produce(bs, 10)
    c, got = consume(bs, "sg", 10)
    try:
        assert sorted(got) == list(range(10))
        c.commit_sync()  # implicit mode: the delivered records are accepted
        produce(bs, 5, start=10)
        # a live member: listed Stable, its partition shown, reset and delete refused
        assert cli(bs, "list").stdout.split() == ["sg"]
        listed = cli(bs, "list", "--state")
        assert listed.returncode == 0 and listed.stdout.split() == ["GROUP", "STATE", "sg", "Stable"]
        members = cli(bs, "describe", "--group", "sg", "--members")
        head, row = members.stdout.strip().splitlines()
        assert head.split() == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"]
        assert row.split()[0] == "sg" and row.split()[-2:] == ["1", "t:0"]
        [state] = rows(bs, "describe", "--group", "sg", "--state")
        assert state["state"] == "Stable" and state["members"] == 1
        reset = cli(bs, "reset-offsets", "--group", "sg", "--topic", "t", "--to-earliest", "--execute")
        assert reset.returncode == 1 and "Share group 'sg' is not empty." in reset.stderr
        deleted = cli(bs, "delete", "--group", "sg")
        assert deleted.returncode == 1 and "Share group 'sg' is not EMPTY." in deleted.stdout
        # the offsets view while it consumes: start offset 10 (0-9 accepted), lag 5
        table = cli(bs, "describe", "--group", "sg")
        assert table.returncode == 0
        lines = table.stdout.strip().splitlines()
        assert lines[0].split() == ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"]
        assert lines[1].split() == ["sg", "t", "0", "10", "5"]
        verbose = cli(bs, "describe", "--group", "sg", "--offsets", "--verbose").stdout.strip().splitlines()
        assert verbose[0].split()[3] == "LEADER-EPOCH" and verbose[1].split() == [
            "sg",
            "t",
            "0",
            "0",
            "10",
            "5",
        ]
    finally:
        c.close()
    wait_state(bs, "sg", "Empty")

    # dry run (the default) shows the plan and changes nothing; --execute sets the start offset
    plan = cli(bs, "reset-offsets", "--group", "sg", "--topic", "t", "--to-earliest")
    assert plan.returncode == 0 and plan.stdout.split()[-4:] == ["sg", "t", "0", "0"]
    assert offsets(bs, "sg") == {("t", 0): (10, 5)}
    assert (
        cli(bs, "reset-offsets", "--group", "sg", "--all-topics", "--to-earliest", "--execute").returncode
        == 0
    )
    assert offsets(bs, "sg") == {("t", 0): (0, 15)}
    assert (
        cli(bs, "reset-offsets", "--group", "sg", "--topic", "t:0", "--to-latest", "--execute").returncode
        == 0
    )
    assert offsets(bs, "sg") == {("t", 0): (15, 0)}
    assert (
        cli(bs, "reset-offsets", "--group", "sg", "--topic", "t", "--to-offset", "12", "--execute").returncode
        == 0
    )
    assert offsets(bs, "sg") == {("t", 0): (12, 3)}
    bad = cli(bs, "reset-offsets", "--group", "sg", "--topic", "t:5", "--to-earliest", "--execute")
    assert bad.returncode == 1 and '"t-5" do not exist' in bad.stdout
    # a new consumer of the group starts where the reset put it
    c2, got2 = consume(bs, "sg", 3)
    try:
        assert sorted(got2) == [12, 13, 14]
    finally:
        c2.close()
    wait_state(bs, "sg", "Empty")

    # delete-offsets: the topic's state goes; an unknown topic is an error per topic (exit 1)
    done = cli(bs, "delete-offsets", "--group", "sg", "--topic", "t")
    assert done.returncode == 0 and done.stdout.split() == ["TOPIC", "STATUS", "t", "Successful"]
    assert "Share group 'sg' has no offset information." in cli(bs, "describe", "--group", "sg").stdout
    unknown = cli(bs, "delete-offsets", "--group", "sg", "--topic", "nope")
    assert unknown.returncode == 1 and "nope" in unknown.stdout and "Error:" in unknown.stdout
    missing = cli(bs, "describe", "--group", "nobody")
    assert missing.returncode == 1 and "GroupIdNotFoundException" in missing.stdout

    # delete: the empty group goes; again: not a share group
    gone = cli(bs, "delete", "--group", "sg")
    assert gone.returncode == 0 and "Deletion of requested share groups ('sg') was successful." in gone.stdout
    assert cli(bs, "list").stdout.split() == []
    again = cli(bs, "delete", "--group", "sg")
    assert again.returncode == 1 and "Group 'sg' is not a share group." in again.stdout
