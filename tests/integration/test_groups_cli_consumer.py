"""`groupcoord groups` (the CLI as a subprocess) on a KIP-848 consumer group of confluent-kafka with
`group.protocol=consumer`: `list --type` shows Consumer beside Classic, `describe --members` and `--state` use
ConsumerGroupDescribe with Kafka 4.3's epoch and assignment columns, and the offsets view shows its lag."""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka import Consumer

from tests.integration.helpers import wait_for_sync
from tests.integration.names import unique
from tests.integration.test_consumer_group_confluent import FLAGS, Member, create_topic, produce, settled
from tests.integration.test_groups_cli import cli

pytestmark = [pytest.mark.integration, pytest.mark.owns_server, pytest.mark.timeout(240)]


def json_rows(bootstrap: str, *args: str) -> list[dict[str, Any]]:
    done = cli(bootstrap, "--output", "json", *args)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def test_groups_cli_lists_and_describes_a_consumer_group(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory(*FLAGS)
    bs = srv.bootstrap
    topic, group, classic = unique("cli848"), unique("cli848-g"), unique("cli848-classic")
    create_topic(bs, topic, 6)
    produce(bs, topic, 0, 30, partitions=6)
    # a classic group holding only a committed offset
    c = Consumer({"bootstrap.servers": bs, "group.id": classic, "enable.auto.commit": False})
    from confluent_kafka import TopicPartition

    c.commit(offsets=[TopicPartition(topic, 0, 3)], asynchronous=False)
    c.close()
    seen: dict[str, str] = {}
    members = [Member(bs, group, topic, f"m{i}", seen) for i in range(2)]
    try:
        wait_for_sync(lambda: settled(srv, group, members), 90, "the consumer group to settle")
        wait_for_sync(lambda: len(seen) == 30, 60, "every record consumed")

        listed = cli(bs, "list", "--type")
        assert listed.returncode == 0, listed.stderr
        words = listed.stdout.split()
        assert words[:2] == ["GROUP", "TYPE"]
        assert words[words.index(group) + 1] == "Consumer" and words[words.index(classic) + 1] == "Classic"
        both = cli(bs, "list", "--type", "consumer", "--state").stdout.split()
        assert both[:3] == ["GROUP", "TYPE", "STATE"] and both[
            both.index(group) + 1 : both.index(group) + 3
        ] == [
            "Consumer",
            "Stable",
        ]
        assert classic not in both
        assert group not in cli(bs, "list", "--type", "classic").stdout.split()
        assert cli(bs, "list", "--type", "bogus").returncode == 2
        assert group in cli(bs, "list", "--state", "Stable").stdout.split()

        rows = json_rows(bs, "describe", "--group", group, "--members", "--verbose")
        assert sorted(r["client_id"] for r in rows) == ["m0", "m1"]
        state = json_rows(bs, "describe", "--group", group, "--state", "--verbose")[0]
        assert (
            state["state"] == "Stable" and state["members"] == 2 and state["assignment_strategy"] == "uniform"
        )
        epoch = state["target_assignment_epoch"]
        assert state["group_epoch"] == epoch
        assert all(r["current_epoch"] == epoch and r["target_epoch"] == epoch for r in rows)
        assert all(r["partitions"] == 3 and r["current_assignment"] == r["target_assignment"] for r in rows)
        owned = sorted(int(p) for r in rows for p in r["current_assignment"].split(":")[1].split(","))
        assert owned == list(range(6))
        assert {r["consumer_id"] for r in rows} == {m.member_id for m in members}

        table = cli(bs, "describe", "--group", group, "--members", "--verbose")
        assert table.returncode == 0, table.stderr
        head = table.stdout.split("\n")[1].split()
        assert head == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH",
                        "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"]  # fmt: skip
        st = cli(bs, "describe", "--group", group, "--state", "--verbose").stdout.split("\n")
        assert st[1].split() == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH",
                                 "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"]  # fmt: skip
        assert st[2].split()[-4:] == ["Stable", str(epoch), str(epoch), "2"]

        # the offsets view: every partition with its owner, committed offsets and no lag
        offs = json_rows(bs, "describe", "--group", group)
        assert sorted(r["partition"] for r in offs) == list(range(6))
        assert all(
            r["log_end_offset"] == 5 and r["consumer_id"] in {m.member_id for m in members} for r in offs
        )
        wait_for_sync(
            lambda: all(r["lag"] == 0 for r in json_rows(bs, "describe", "--group", group)), 30, "lag 0"
        )
        # a classic group is still described through DescribeGroups
        assert json_rows(bs, "describe", "--group", classic)[0]["current_offset"] == 3
    finally:
        for m in members:
            m.close()
    wait_for_sync(
        lambda: json_rows(bs, "describe", "--group", group, "--state")[0]["state"] == "Empty", 60, "Empty"
    )


def test_validate_regex_checks_re2_syntax_without_a_broker() -> None:
    """Kafka's `--validate-regex`: RE2 syntax, Kafka's wording; exit 1 when invalid (scripts can test it)."""
    ok = cli("127.0.0.1:1", "validate-regex", "orders-.*")
    assert (ok.returncode, ok.stdout) == (0, "The regular expression `orders-.*` is valid.\n")
    bad = cli("127.0.0.1:1", "validate-regex", "orders(?=x)")  # look-ahead: Perl, not RE2
    assert bad.returncode == 1
    assert bad.stdout.startswith("The regular expression `orders(?=x)` is invalid: ")
