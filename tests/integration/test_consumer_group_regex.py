"""Regex subscriptions with confluent-kafka 2.16 and `group.protocol=consumer` against the real server:
librdkafka sends a `^`-prefixed subscription as SubscribedTopicRegex, the coordinator resolves it (RE2, full
match) and picks up a topic created later."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer

from tests.integration.helpers import PollingThread, wait_for_sync
from tests.integration.names import unique
from tests.integration.test_consumer_group_confluent import FLAGS, create_topic, describe

pytestmark = [pytest.mark.integration, pytest.mark.owns_server, pytest.mark.timeout(240)]


def test_prefix_regex_picks_up_a_new_matching_topic(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory(*FLAGS)
    prefix = unique("rx")
    first, later, other = f"{prefix}-a", f"{prefix}-b", f"x{prefix}-c"
    create_topic(srv.bootstrap, first, 2)
    create_topic(srv.bootstrap, other, 1)  # does not match `^prefix.*`
    group = unique("rx-group")
    conf = {
        "bootstrap.servers": srv.bootstrap,
        "group.id": group,
        "group.protocol": "consumer",
        "auto.offset.reset": "earliest",
    }

    def make() -> Consumer:
        c = Consumer(conf)
        c.subscribe([f"^{prefix}-.*"])
        return c

    def snapshot(c: Consumer) -> frozenset[tuple[str, int]]:
        return frozenset((tp.topic, tp.partition) for tp in c.assignment())

    t = PollingThread(make, lambda c: c.poll(0.1), snapshot, name="ck-regex-848")
    t.wait_ready()
    try:
        want = {(first, 0), (first, 1)}
        wait_for_sync(lambda: t.state == want, 60, f"assignment {want}, have {t.state}")
        g = describe(srv, group)
        assert g.error_code == 0
        (m,) = g.members
        assert m.subscribed_topic_regex == f"(^{prefix}-.*)" or m.subscribed_topic_regex == f"^{prefix}-.*"
        epoch = g.group_epoch
        create_topic(srv.bootstrap, later, 3)
        want = {(first, 0), (first, 1), (later, 0), (later, 1), (later, 2)}
        wait_for_sync(lambda: t.state == want, 60, f"assignment {want}, have {t.state}")
        assert describe(srv, group).group_epoch > epoch
    finally:
        t.stop(lambda c: c.close())
