"""aiokafka adapters: wire format, leader/follower flow as aiokafka drives it, generation tracking."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from aiokafka.cluster import ClusterMetadata
from aiokafka.coordinator.assignors.sticky.sticky_assignor import (
    StickyAssignorUserDataV1,
    StickyPartitionAssignor,
)
from aiokafka.coordinator.protocol import ConsumerProtocol, ConsumerProtocolMemberMetadata
from aiokafka.protocol.metadata import MetadataResponse_v1

from groupcoord.assignors import TopicPartition
from groupcoord.assignors.adapters import (
    CopartitionAssignor,
    CoreAssignor,
    RackAwareAssignor,
    RangeAssignor,
    ReplicatedAssignor,
    RoundRobinAssignor,
    StickyAssignor,
    install_full_subscription_decoding,
)
from groupcoord.assignors.adapters.aiokafka_compat import RawConsumerProtocolMemberMetadata
from groupcoord.assignors.adapters.userdata import (
    decode_labels,
    decode_stamp,
    decode_sticky_user_data,
    encode_labels,
    encode_sticky_user_data,
)
from groupcoord.protocol.consumer import (
    ConsumerProtocolSubscription,
    TopicPartitions,
    decode_assignment,
    decode_subscription,
    encode_subscription,
)


def make_cluster(
    topics: dict[str, int], broker_racks: dict[int, str | None] | None = None
) -> ClusterMetadata:
    """A real aiokafka ClusterMetadata fed a Metadata v1 response; partition p's replica is broker
    ``p % len(brokers)``."""
    racks = broker_racks or {0: None}
    brokers = [(n, "127.0.0.1", 9092 + n, r) for n, r in racks.items()]
    ids = sorted(racks)
    topic_rows = [
        (0, t, False, [(0, p, ids[p % len(ids)], [ids[p % len(ids)]], [ids[p % len(ids)]]) for p in range(n)])
        for t, n in topics.items()
    ]
    cluster = ClusterMetadata()
    cluster.update_metadata(MetadataResponse_v1(brokers, ids[0], topic_rows))
    return cluster


def run_round(
    assignors: dict[str, CoreAssignor], topics: dict[str, list[str]], cluster: ClusterMetadata
) -> dict[str, list[TopicPartition]]:
    """One JoinGroup/SyncGroup round as aiokafka's group coordinator performs it: metadata() per member,
    leader decodes with ConsumerProtocol.METADATA and calls assign(), members get on_assignment()."""
    wire = {m: a.metadata(topics[m]) for m, a in assignors.items()}
    leader = next(iter(assignors.values()))
    decoded = {m: ConsumerProtocol.METADATA.decode(b) for m, b in wire.items()}
    result = leader.assign(cluster, decoded)
    out = {}
    for m, a in assignors.items():
        raw = result[m]
        assert isinstance(raw, bytes)
        a.on_assignment(ConsumerProtocol.ASSIGNMENT.decode(raw))
        out[m] = list(a.owned)
    return out


def test_metadata_is_subscription_v3_with_owned_generation_and_rack() -> None:
    a = RangeAssignor(rack="r1", labels={"zone": "z"})
    a.owned, a.generation = (TopicPartition("t", 1), TopicPartition("t", 0)), 5
    sub = decode_subscription(a.metadata({"t", "a"}))
    assert sub.version == 3
    assert sub.topics == ("a", "t")
    assert sub.owned_partitions == (TopicPartitions("t", (0, 1)),)
    assert sub.generation_id == 5
    assert sub.rack_id == "r1"
    assert decode_labels(sub.user_data) == {"rack": "r1", "zone": "z"}


def test_sticky_user_data_is_the_layout_java_and_aiokafka_use() -> None:
    owned = [TopicPartition("t", 2), TopicPartition("u", 0), TopicPartition("t", 0)]
    data = encode_sticky_user_data(owned, 4)
    theirs = StickyAssignorUserDataV1.decode(data)
    assert theirs.generation == 4
    assert sorted((t, p) for t, ps in theirs.previous_assignment for p in ps) == sorted(owned)
    ours = StickyAssignorUserDataV1([("a", [3, 1])], 9).encode()
    assert decode_sticky_user_data(ours) == ([TopicPartition("a", 3), TopicPartition("a", 1)], 9)
    assert decode_sticky_user_data(b"\x00\x00") is None
    assert decode_sticky_user_data(encode_labels({"rack": "x"})) is None


def test_install_keeps_raw_bytes_and_is_idempotent() -> None:
    install_full_subscription_decoding()
    install_full_subscription_decoding()
    assert ConsumerProtocol.METADATA is RawConsumerProtocolMemberMetadata
    data = RangeAssignor().metadata(["t"])
    decoded = ConsumerProtocol.METADATA.decode(data)
    assert decoded.raw_bytes == data
    assert decoded.subscription == ["t"]
    assert decoded == ConsumerProtocolMemberMetadata.decode(data)


@pytest.mark.parametrize(
    "factory",
    [
        RangeAssignor,
        RoundRobinAssignor,
        StickyAssignor,
        RackAwareAssignor,
        lambda: CopartitionAssignor([["t", "u"]]),
        lambda: ReplicatedAssignor(k=2),
    ],
)
def test_leader_round_trip_through_aiokafka_structs(factory) -> None:
    cluster = make_cluster({"t": 4, "u": 4})
    assignors = {f"m{i}": factory() for i in range(3)}
    topics = {m: ["t", "u"] for m in assignors}
    out = run_round(assignors, topics, cluster)
    copies = 2 if assignors["m0"].name == "replicated" else 1
    everything = [x for ps in out.values() for x in ps]
    assert sorted(set(everything)) == [TopicPartition(t, p) for t in "tu" for p in range(4)]
    assert len(everything) == 8 * copies
    assert all(a.generation == 0 for a in assignors.values())  # leader's stamp: no generation known yet


def test_sticky_keeps_partitions_across_rounds_and_generations_advance() -> None:
    cluster = make_cluster({"t": 6})
    assignors = {m: StickyAssignor() for m in ("a", "b")}
    topics = {"a": ["t"], "b": ["t"], "c": ["t"]}
    first = run_round(assignors, topics, cluster)
    assignors["c"] = StickyAssignor()
    second = run_round(assignors, topics, cluster)
    for m in ("a", "b"):
        assert len(set(first[m]) & set(second[m])) == 2  # kept 2 of 3, gave one to the newcomer
    assert {a.generation for a in assignors.values()} == {1}


def test_sticky_works_without_full_decoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """A leader that only sees v0 fields still gets owned partitions from StickyAssignorUserDataV1."""
    monkeypatch.setattr(ConsumerProtocol, "METADATA", ConsumerProtocolMemberMetadata)
    cluster = make_cluster({"t": 6})
    assignors = {m: StickyAssignor(full_subscriptions=False) for m in ("a", "b", "c")}
    topics = {key: ["t"] for key in assignors}
    first = run_round(assignors, topics, cluster)
    del assignors["c"]
    second = run_round(assignors, topics, cluster)
    for m in ("a", "b"):
        assert set(first[m]) <= set(second[m])


def test_rack_aware_uses_rack_label_when_only_v0_is_visible(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ConsumerProtocol, "METADATA", ConsumerProtocolMemberMetadata)
    cluster = make_cluster({"t": 4}, {0: "east", 1: "west"})  # even partitions in east, odd in west
    assignors = {
        "m-east": RackAwareAssignor(rack="east", full_subscriptions=False),
        "m-west": RackAwareAssignor(rack="west", full_subscriptions=False),
    }
    out = run_round(assignors, {key: ["t"] for key in assignors}, cluster)
    assert out == {
        "m-east": [TopicPartition("t", 0), TopicPartition("t", 2)],
        "m-west": [TopicPartition("t", 1), TopicPartition("t", 3)],
    }


def test_range_sees_java_members_v3_rack_ids() -> None:
    """A Java member's v3 subscription (rack in rack_id only) is honoured: KIP-881 range, as Java would."""
    cluster = make_cluster({"t": 4}, {0: "a", 1: "b"})
    java_sub = encode_subscription(ConsumerProtocolSubscription(version=3, topics=("t",), rack_id="b"))
    ours = RangeAssignor(rack="a")
    members = {
        "java": ConsumerProtocol.METADATA.decode(java_sub),
        "py": ConsumerProtocol.METADATA.decode(ours.metadata(["t"])),
    }
    result = {m: decode_assignment(b) for m, b in ours.assign(cluster, members).items()}
    assert result["java"].assigned_partitions == (TopicPartitions("t", (1, 3)),)
    assert result["py"].assigned_partitions == (TopicPartitions("t", (0, 2)),)


def test_sticky_honours_java_v3_owned_partitions_and_generation() -> None:
    cluster = make_cluster({"t": 4})
    java = ConsumerProtocolSubscription(
        version=3, topics=("t",), owned_partitions=(TopicPartitions("t", (1, 3)),), generation_id=8
    )
    stale_py = StickyAssignor()
    stale_py.owned, stale_py.generation = (TopicPartition("t", 1), TopicPartition("t", 3)), 7
    members = {
        "java": ConsumerProtocol.METADATA.decode(encode_subscription(java)),
        "py": ConsumerProtocol.METADATA.decode(stale_py.metadata(["t"])),
    }
    result = {m: decode_assignment(b) for m, b in StickyAssignor().assign(cluster, members).items()}
    assert result["java"].assigned_partitions == (TopicPartitions("t", (1, 3)),)
    assert decode_stamp(result["py"].user_data) == 9


def test_sticky_reads_aiokafkas_own_sticky_members() -> None:
    cluster = make_cluster({"t": 4})
    StickyPartitionAssignor.member_assignment = [TopicPartition("t", 0), TopicPartition("t", 1)]
    StickyPartitionAssignor.generation = 3
    try:
        theirs = StickyPartitionAssignor.metadata({"t"}).encode()
    finally:
        StickyPartitionAssignor.member_assignment = None
        StickyPartitionAssignor.generation = -1
    members = {
        "aiokafka": ConsumerProtocol.METADATA.decode(theirs),
        "new": ConsumerProtocol.METADATA.decode(StickyAssignor().metadata(["t"])),
    }
    result = {m: decode_assignment(b) for m, b in StickyAssignor().assign(cluster, members).items()}
    assert result["aiokafka"].assigned_partitions == (TopicPartitions("t", (0, 1)),)


def test_bound_assignor_uses_the_consumers_generation() -> None:
    consumer = SimpleNamespace(_coordinator=SimpleNamespace(generation=12))
    cluster = make_cluster({"t": 2})
    a = StickyAssignor().bind(consumer)
    b = StickyAssignor()  # unbound: learns the generation from the leader's stamp
    run_round({"a": a, "b": b}, {"a": ["t"], "b": ["t"]}, cluster)
    assert a.generation == 12
    assert b.generation == 12
    sub = decode_subscription(a.metadata(["t"]))
    assert sub.generation_id == 12 and sub.owned_partitions
    consumer._coordinator.generation = -1  # aiokafka reset the generation: membership lost
    sub = decode_subscription(a.metadata(["t"]))
    assert sub.generation_id == -1 and sub.owned_partitions == ()


def test_on_generation_assignment_is_honoured_when_called() -> None:
    a = RoundRobinAssignor()
    a.on_generation_assignment(3)
    assert decode_subscription(a.metadata(["t"])).generation_id == 3


def test_undecodable_subscription_falls_back_to_v0_fields() -> None:
    cluster = make_cluster({"t": 2})
    bogus = ConsumerProtocolMemberMetadata(3, ["t"], b"").encode() + b"\x01"  # truncated v3 body
    members = {"x": ConsumerProtocol.METADATA.decode(bogus)}
    result = RangeAssignor().assign(cluster, members)
    assert decode_assignment(result["x"]).assigned_partitions == (TopicPartitions("t", (0, 1)),)


def test_assignment_errors_surface_from_assign() -> None:
    cluster = make_cluster({"a": 2, "b": 3})
    members = {"x": ConsumerProtocol.METADATA.decode(RangeAssignor().metadata(["a", "b"]))}
    with pytest.raises(Exception, match="partition count"):
        CopartitionAssignor([["a", "b"]]).assign(cluster, members)
