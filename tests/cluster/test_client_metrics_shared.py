"""Client metrics subscriptions (CLIENT_METRICS config resources) are the cluster's in cluster mode, as in
Kafka's metadata log: set through one node, DescribeConfigs and ListConfigResources at the other answer them,
a restarted node has them, a removal at one node is seen by all, changes at both nodes to one subscription
both stay."""

from __future__ import annotations

import pytest

from tests.cluster.helpers import start_nodes
from tests.cluster.test_group_configs import ask, until
from tests.integration.test_client_metrics_configs import (
    APPEND,
    CLIENT_METRICS,
    DELETE,
    SET,
    alter,
    describe,
    listed,
    values,
)

pytestmark = [pytest.mark.integration]
SUBSCRIBED = 7  # CLIENT_METRICS_CONFIG


async def test_subscriptions_set_at_one_node_are_seen_at_every_node(server_factory, pg_url: str) -> None:  # type: ignore[no-untyped-def]
    nodes = start_nodes(server_factory, pg_url, 2)
    one, two = nodes[1], nodes[2]
    assert (
        ask(one, lambda c: alter(c, "cm1", ("interval.ms", SET, "1000"), ("metrics", SET, "a."))).error_code
        == 0
    )
    await until(
        "the other node describes it",
        lambda: values(ask(two, lambda c: describe(c, "cm1"))),
        lambda v: v["interval.ms"] == ("1000", SUBSCRIBED) and v["metrics"] == ("a.", SUBSCRIBED),
    )
    await until(
        "the other node lists it",
        lambda: ask(two, lambda c: listed(c, 0)),
        lambda v: v == [("cm1", CLIENT_METRICS)],
    )
    # a change at the second node starts from the cluster's configs, not from what it last adopted
    assert ask(two, lambda c: alter(c, "cm1", ("metrics", APPEND, "b."))).error_code == 0
    assert ask(one, lambda c: alter(c, "cm1", ("metrics", APPEND, "c."))).error_code == 0
    await until(
        "both appends stay",
        lambda: values(ask(two, lambda c: describe(c, "cm1")))["metrics"],
        lambda v: v == ("a.,b.,c.", SUBSCRIBED),
    )
    two.restart()
    await until(  # a restarted node adopts the cluster's configs at its first tick, not before it listens
        "the restarted node reads the cluster's subscription",
        lambda: values(ask(two, lambda c: describe(c, "cm1")))["interval.ms"],
        lambda v: v == ("1000", SUBSCRIBED),
    )
    assert (
        ask(
            two, lambda c: alter(c, "cm1", ("interval.ms", DELETE, None), ("metrics", DELETE, None))
        ).error_code
        == 0
    )
    await until("the removal is seen", lambda: ask(one, lambda c: listed(c, 0)), lambda v: v == [])
