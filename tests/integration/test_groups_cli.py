"""`groupcoord groups` against real consumer groups: kafka-consumer-groups.sh's output, effects and exit codes."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from kafka import KafkaConsumer, TopicPartition

from groupcoord.server.ops.groups_cli import NO_EXECUTE_WARNING
from tests.conftest import ROOT, free_port
from tests.integration.helpers import wait_for
from tests.integration.lag_fixture import lagging_group
from tests.integration.names import unique

pytestmark = [pytest.mark.integration]
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)


def cli(bootstrap: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "groupcoord.server", "groups", "--bootstrap-server", bootstrap, *args],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


async def acli(bootstrap: str, *args: str) -> subprocess.CompletedProcess:
    """`cli` off the event loop, for while a consumer of the test is live: a blocking run would starve its
    heartbeats, and on a loaded machine (a CLI start taking seconds) the member would time out of its group."""
    return await asyncio.to_thread(cli, bootstrap, *args)


async def arows(bootstrap: str, *args: str) -> list[dict]:
    return await asyncio.to_thread(rows, bootstrap, *args)


async def acommitted(bootstrap: str, group: str) -> dict[tuple[str, int], int | None]:
    return await asyncio.to_thread(committed, bootstrap, group)


def rows(bootstrap: str, *args: str) -> list[dict]:
    done = cli(bootstrap, "--output", "json", *args)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def committed(bootstrap: str, group: str) -> dict[tuple[str, int], int | None]:
    return {
        (r["topic"], r["partition"]): r["current_offset"]
        for r in rows(bootstrap, "describe", "--group", group)
    }


async def test_list_and_describe_show_members_offsets_and_lag(groupcoord_server) -> None:
    bs = groupcoord_server.bootstrap
    T, G = unique("cli1"), unique("g1")  # a shared server keeps other tests' groups
    consumer = await lagging_group(bs, T, G)
    try:
        done = await acli(bs, "list")
        assert done.returncode == 0 and G in done.stdout.split()
        listed = (await acli(bs, "list", "--state")).stdout.split()
        assert listed[:2] == ["GROUP", "STATE"] and listed[listed.index(G) + 1] == "Stable"
        empty = (await acli(bs, "list", "--state", "Empty")).stdout.split()
        assert empty[:2] == ["GROUP", "STATE"] and G not in empty
        assert (await acli(bs, "list", "--state", "bogus")).returncode == 2

        member = next(iter(await arows(bs, "describe", "--group", G, "--members")))
        assert member["client_id"] == f"{G}-client" and member["partitions"] == 2
        assert member["assignment"] == f"{T}:0,1"

        table = await acli(bs, "describe", "--group", G)
        assert table.returncode == 0
        lines = [ln.split() for ln in table.stdout.strip().splitlines()]
        assert lines[0] == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                            "CONSUMER-ID", "HOST", "CLIENT-ID"]  # fmt: skip
        assert lines[1][:6] == [G, T, "0", "3", "10", "7"] and lines[1][-1] == f"{G}-client"
        assert lines[2][:6] == [G, T, "1", "4", "4", "0"]
        assert lines[1][6] == member["consumer_id"]

        state = (await arows(bs, "describe", "--group", G, "--state"))[0]
        assert state["state"] == "Stable" and state["members"] == 1
        assert state["coordinator"] == f"{groupcoord_server.host}:{groupcoord_server.port}  (0)"
        assert state["assignment_strategy"] == "roundrobin"

        csv_out = (await acli(bs, "--output", "csv", "describe", "--group", G)).stdout.splitlines()
        assert csv_out[0].startswith("group,topic,partition,current_offset,log_end_offset,lag")
        assert csv_out[1].startswith(f"{G},{T},0,3,10,7,")

        missing = await acli(bs, "describe", "--group", "nope")
        assert missing.returncode == 1 and "Error: Consumer group 'nope' does not exist." in missing.stdout
    finally:
        await consumer.stop()


async def test_reset_offsets_refuses_live_groups_then_plans_and_executes(
    groupcoord_server, tmp_path: Path
) -> None:
    bs = groupcoord_server.bootstrap
    T, G = unique("cli2"), unique("g2")  # a shared server keeps other tests' groups
    consumer = await lagging_group(bs, T, G)
    try:
        live = await acli(bs, "reset-offsets", "--group", G, "--all-topics", "--to-earliest", "--execute")
        assert live.returncode == 1
        assert (
            f"Error: Assignments can only be reset if the group '{G}' is inactive, but the current state is Stable."
            in live.stdout
        )
        assert await acommitted(bs, G) == {(T, 0): 3, (T, 1): 4}
    finally:
        await consumer.stop()
    await wait_for(lambda: rows(bs, "describe", "--group", G, "--state")[0]["state"] == "Empty", 60, "Empty")

    dry = cli(bs, "reset-offsets", "--group", G, "--all-topics", "--to-earliest")
    assert dry.returncode == 0
    # neither --dry-run nor --execute: a dry run, and our warning on stderr (Kafka's names its 5.0; #36)
    assert dry.stderr.strip() == NO_EXECUTE_WARNING
    explicit = cli(bs, "reset-offsets", "--group", G, "--all-topics", "--to-earliest", "--dry-run")
    assert explicit.returncode == 0 and explicit.stderr == "" and explicit.stdout == dry.stdout
    assert [ln.split() for ln in dry.stdout.strip().splitlines()] == [
        ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], [G, T, "0", "0"], [G, T, "1", "0"],
    ]  # fmt: skip
    assert committed(bs, G) == {(T, 0): 3, (T, 1): 4}, "a dry run must not commit"

    def reset(*spec: str) -> dict[tuple[str, int], int | None]:
        done = cli(bs, "reset-offsets", "--group", G, *spec, "--execute")
        assert done.returncode == 0 and "WARN" not in done.stderr, done.stdout + done.stderr
        return committed(bs, G)

    assert reset("--all-topics", "--to-earliest") == {(T, 0): 0, (T, 1): 0}
    assert reset("--all-topics", "--shift-by", "5") == {(T, 0): 5, (T, 1): 4}  # clamped to the end
    assert reset("--topic", f"{T}:0", "--to-offset", "8") == {(T, 0): 8, (T, 1): 4}
    assert reset("--topic", T, "--to-offset", "99") == {(T, 0): 10, (T, 1): 4}
    assert reset("--all-topics", "--to-datetime", "2000-01-01T00:00:00.000") == {
        (T, 0): 0,
        (T, 1): 0,
    }
    assert reset("--all-topics", "--to-latest") == {(T, 0): 10, (T, 1): 4}
    assert reset("--all-topics", "--by-duration", "P1D") == {(T, 0): 0, (T, 1): 0}

    export = cli(bs, "reset-offsets", "--group", G, "--topic", T, "--shift-by", "2", "--export")
    assert export.returncode == 0 and export.stdout.split() == [f"{T},0,2", f"{T},1,2"]
    plan = tmp_path / "plan.csv"
    plan.write_text(export.stdout)
    assert reset("--from-file", str(plan)) == {(T, 0): 2, (T, 1): 2}

    # a real kafka-python consumer of the group resumes where the reset put it
    kc = KafkaConsumer(bootstrap_servers=bs, group_id=G, enable_auto_commit=False)
    try:
        kc.assign([TopicPartition(T, 0)])
        assert kc.position(TopicPartition(T, 0)) == 2
    finally:
        kc.close()


SUBSCRIBED = (
    "org.apache.kafka.common.errors.GroupSubscribedToTopicException: "
    "Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to it."
)
UNKNOWN = "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: This server does not host this topic-partition."


def status_table(stdout: str) -> tuple[str, list[list[str]]]:
    """kafka-consumer-groups.sh --delete-offsets: the group-level line, a blank line, TOPIC PARTITION STATUS rows."""
    lines = stdout.strip("\n").split("\n")
    assert lines[1] == "" and lines[2].split() == ["TOPIC", "PARTITION", "STATUS"], stdout
    return lines[0], [ln.split(None, 2) for ln in lines[3:]]


async def test_delete_groups_and_offset_delete_answers(groupcoord_server) -> None:
    bs = groupcoord_server.bootstrap
    T, G = unique("cli3"), unique("g3")  # a shared server keeps other tests' groups
    consumer = await lagging_group(bs, T, G)
    try:
        busy = await acli(bs, "delete", "--group", G)
        assert busy.returncode == 1 and "NON_EMPTY_GROUP" in busy.stdout
        # the live consumer subscribes to cli3: Kafka refuses each partition, and the tool says so first
        subscribed = await acli(bs, "delete-offsets", "--group", G, "--topic", T)
        assert subscribed.returncode == 1
        assert status_table(subscribed.stdout) == (
            "Error: Encountered some partition-level error, see the follow-up details.",
            [[T, "0", f"Error: {SUBSCRIBED}"], [T, "1", f"Error: {SUBSCRIBED}"]],
        )
        assert "Request succeeded" not in subscribed.stdout
        assert await acommitted(bs, G) == {(T, 0): 3, (T, 1): 4}
    finally:
        await consumer.stop()
    await wait_for(lambda: rows(bs, "describe", "--group", G, "--state")[0]["state"] == "Empty", 60, "Empty")
    # a partition the broker refuses next to one it deletes: the verdict is the partition-level error, not success
    mixed = cli(
        bs, "delete-offsets", "--group", G, "--topic", f"{T}:1", "--topic", "nosuch:0", "--topic", "nosuch2"
    )
    assert mixed.returncode == 1
    assert status_table(mixed.stdout) == (
        "Error: Encountered some partition-level error, see the follow-up details.",
        [[T, "1", "Successful"], ["nosuch", "0", f"Error: {UNKNOWN}"], ["nosuch2", "-", f"Error: {UNKNOWN}"]],
    )
    assert "Request succeeded" not in mixed.stdout
    assert committed(bs, G) == {(T, 0): 3}
    done = cli(bs, "delete-offsets", "--group", G, "--topic", f"{T}:0")
    assert done.returncode == 0, done.stdout + done.stderr
    assert status_table(done.stdout) == (
        f"Request succeeded for deleting offsets from group {G}.",
        [[T, "0", "Successful"]],
    )
    assert committed(bs, G) == {}
    only_unknown = cli(bs, "delete-offsets", "--group", G, "--topic", "nosuch3")
    assert only_unknown.returncode == 1
    assert status_table(only_unknown.stdout) == (
        "Error: Encountered some partition-level error, see the follow-up details.",
        [["nosuch3", "-", f"Error: {UNKNOWN}"]],
    )
    gone = cli(bs, "delete-offsets", "--group", "no-such-group", "--topic", f"{T}:0")
    assert gone.returncode == 1
    assert status_table(gone.stdout) == (
        "Error: The group id does not exist.",
        [
            [
                T,
                "0",
                "Error: org.apache.kafka.common.errors.GroupIdNotFoundException: The group id does not exist.",
            ]
        ],
    )
    done = cli(bs, "delete", "--group", G)
    assert (
        done.returncode == 0
        and f"Deletion of requested consumer groups ('{G}') was successful." in done.stdout
    )
    assert G not in cli(bs, "list").stdout.split()
    assert cli(bs, "describe", "--group", G).returncode == 1


def test_usage_and_connection_errors_have_their_exit_codes() -> None:
    assert cli("127.0.0.1:1", "reset-offsets", "--group", "g").returncode == 2  # no reset spec
    bad = cli("127.0.0.1:1", "delete-offsets", "--group", "g", "--topic", "t:zero")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr
    nobody = cli(f"127.0.0.1:{free_port()}", "list")
    assert nobody.returncode == 1 and "Error: cannot connect" in nobody.stdout
