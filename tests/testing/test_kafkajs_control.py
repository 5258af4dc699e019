"""A non-Python suite's view: kafkajs members, with the test controls driven over HTTP from node itself.

The driver (`tests/drivers/kafkajs/driver.js`, scenario `control`) runs two kafkajs consumers and calls the
coordinator's HTTP control endpoint with node's built-in fetch: it forces a rebalance, then fails the group's
next OffsetCommit. This test checks the server's side between the driver's phases.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from kafka.admin import KafkaAdminClient

from tests.integration import drivers
from tests.integration.helpers import wait_for_sync

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]
logging.getLogger("kafka").setLevel(logging.CRITICAL)
DRIVER = str(drivers.DRIVERS / "kafkajs" / "driver.js")


@pytest.fixture
def kafkajs(groupcoord_process) -> Iterator:  # type: ignore[no-untyped-def]
    env = {"NODE_PATH": drivers.kafkajs_node_path(), "KAFKAJS_NO_PARTITIONER_WARNING": "1"}
    started: list[drivers.Driver] = []

    def run(*args: str) -> drivers.Driver:
        d = drivers.Driver(["node", DRIVER, *args], env=env)
        started.append(d)
        return d

    yield run
    for d in started:
        d.kill()


def committed(bootstrap: str, group: str) -> dict[int, int]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        return {tp.partition: om.offset for tp, om in admin.list_group_offsets(group)[group].items()}
    finally:
        admin.close()


def test_kafkajs_members_rejoin_a_forced_rebalance_and_recover_from_a_failed_commit_over_http(
    groupcoord_process, kafkajs
) -> None:
    coord, topic, group = groupcoord_process, "kafkajs-ctl-t", "kafkajs-ctl-g"
    d = kafkajs("control", coord.bootstrap, topic, group, coord.control_url)

    consumed = d.phase("consumed")
    before = coord.describe(group)
    assert before.state == "Stable" and len(before.members) == 2
    assert {m.member_id for m in before.members} == {m["member_id"] for m in consumed["members"]}
    d.go()

    rebalanced = d.phase("rebalanced")
    forced = rebalanced["forced"]
    assert (forced["state"], forced["generation"]) == ("PreparingRebalance", before.generation)
    after = coord.describe(group)
    assert (after.state, after.generation) == ("Stable", before.generation + 1)
    assert {m.member_id for m in after.members} == {m.member_id for m in before.members}
    assert sorted(p for m in rebalanced["members"] for p in m["partitions"]) == [0, 1]
    assert rebalanced["records"] == 30
    d.go()

    done = d.phase("committed")
    assert done["fault"]["apis"] == ["OFFSET_COMMIT"] and done["fault"]["error"] == "REBALANCE_IN_PROGRESS"
    [failed] = d.of("commit_failed")
    assert "REBALANCE_IN_PROGRESS" in (failed["error"], failed.get("cause")), failed
    assert done["records"] == 50
    # later commits succeed: every record of both partitions (25 each) ends up committed
    wait_for_sync(lambda: committed(coord.bootstrap, group) == {0: 25, 1: 25}, 30, "commits to catch up")
    assert coord.call("GET", "/v1/faults")["faults"] == []  # the one-shot fault was spent
    d.go()
    d.finish()
