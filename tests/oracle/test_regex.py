"""KIP-848 regex subscriptions on Kafka 4.4 and groupcoord, internal topics included (Kafka resolves a regex
asynchronously: each scenario heartbeats until the assignment it waits for, then compares where it ended)."""

from __future__ import annotations

import pytest

from tests.oracle.reqs import cg_describe, metadata, topic_ids
from tests.oracle.test_consumer import npartitions, owned, settle
from tests.oracle.transcript import Names, Recorder, assert_same

pytestmark = pytest.mark.integration


def regex_join(r: Recorder, c, g: str, regex: str):  # type: ignore[no-untyped-def]
    """The joining heartbeat, its error code noted, not its epoch or assignment: Kafka resolves a new regex
    asynchronously (the join answers epoch 1, nothing assigned), groupcoord in the joining heartbeat
    (docs/differences.md, regex resolution); where both end is compared."""
    from groupcoord.protocol.api import ApiKey
    from groupcoord.protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest

    req = ConsumerGroupHeartbeatRequest(
        group_id=g, member_id="m1", member_epoch=0, rebalance_timeout_ms=30000, subscribed_topic_regex=regex,
        topic_partitions=(),
    )  # fmt: skip
    c.send(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, req)
    a = c.recv()
    r.note("regex join error", a.error_code)
    return a


def regex_matching_topics(r: Recorder, n: Names) -> None:
    g = n("g")
    r.epoch_shift = 1
    r.target.create_topic(n("ra"), 2)
    r.target.create_topic(n("rb"), 1)
    r.target.create_topic(n("xc"), 1)
    c = r.conn("c")
    ids = topic_ids(c, n("ra"), n("rb"), n("xc"))
    r.note("topic ids", [ids[n("ra")], ids[n("rb")], ids[n("xc")]])  # placeholders in a fixed order
    a = regex_join(r, c, g, n("r") + ".*")
    settle(
        r,
        c,
        "regex resolved",
        g,
        {"m1": (a.member_epoch, owned(a))},
        lambda ms: npartitions(ms["m1"][1]) == 3,
    )
    cg_describe(r, c, "describe regex group", g)


def internal_topics_visible(r: Recorder, n: Names) -> None:
    """__consumer_offsets in Metadata (listed, internal) and to a regex (Kafka's resolver sees every topic of
    its image, internal ones too)."""
    c = r.conn("c")
    t = metadata(c, "__consumer_offsets").topics[0]
    r.note(
        "metadata __consumer_offsets",
        {"error": t.error_code, "internal": t.is_internal, "partitions": len(t.partitions)},
    )
    g = n("g")
    r.epoch_shift = 1
    a = regex_join(r, c, g, "__consumer_offsets")
    settle(
        r,
        c,
        "regex on the offsets topic",
        g,
        {"m1": (a.member_epoch, owned(a))},
        lambda ms: npartitions(ms["m1"][1]) > 0,
        timeout=40,
    )


@pytest.mark.parametrize(
    "scenario", [regex_matching_topics, internal_topics_visible], ids=lambda s: s.__name__
)
def test_regex_same_as_kafka(oracle_pair, scenario) -> None:  # type: ignore[no-untyped-def]
    assert_same(oracle_pair, scenario, scenario.__name__)
