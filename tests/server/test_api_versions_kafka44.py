"""ApiVersions against Kafka 4.4.0's, API by API, and the feature flags (issue 37).

`KAFKA_44` is Kafka 4.4.0's broker answer (ApiVersions v4 to a single-node KRaft broker, taken with
/work/oracle/start-kafka.sh); to be replaced by the oracle fixture (tests/oracle) once merged. Every API
groupcoord serves must advertise Kafka's range, or be in `BELOW_KAFKA`, each named in docs/differences.md.
"""

from __future__ import annotations

from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.api_versions import ApiVersionsRequest
from tests.server.test_dispatch import FakeConn, call, loading_broker

# fmt: off
KAFKA_44: dict[int, tuple[int, int]] = {
    0: (0, 13), 1: (4, 18), 2: (1, 11), 3: (0, 13), 8: (2, 10), 9: (1, 10), 10: (0, 6), 11: (0, 9), 12: (0, 4),
    13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 17: (0, 1), 18: (0, 5), 19: (2, 7), 20: (1, 6), 21: (0, 2),
    22: (0, 5), 23: (2, 4), 24: (0, 5), 25: (0, 4), 26: (0, 5), 27: (1, 2), 28: (0, 6), 29: (1, 3), 30: (1, 3),
    31: (1, 3), 32: (1, 4), 33: (0, 2), 34: (1, 2), 35: (1, 5), 36: (0, 2), 37: (0, 3), 38: (1, 3), 39: (1, 2),
    40: (1, 2), 41: (1, 3), 42: (0, 3), 43: (0, 2), 44: (0, 1), 45: (0, 1), 46: (0, 0), 47: (0, 0), 48: (0, 1),
    49: (0, 1), 50: (0, 0), 51: (0, 0), 55: (0, 2), 57: (0, 2), 60: (0, 2), 61: (0, 0), 64: (0, 0), 65: (0, 0),
    66: (0, 2), 68: (0, 1), 69: (0, 1), 74: (0, 1), 75: (0, 0), 76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2),
    80: (0, 1), 81: (0, 0), 83: (0, 0), 84: (0, 0), 85: (0, 1), 86: (0, 0), 87: (0, 1), 88: (0, 1), 89: (0, 1),
    90: (0, 1), 91: (0, 0), 92: (0, 0), 93: (0, 0), 94: (0, 0),
}
# fmt: on

#: served, with a range that is not Kafka 4.4's yet (docs/differences.md, "ApiVersions and feature flags")
BELOW_KAFKA: dict[int, tuple[int, int]] = {
    1: (4, 12),  # Fetch: topic ids from v13 not served
    2: (1, 7),  # ListOffsets
    8: (0, 10),  # OffsetCommit: v0-1 kept (Kafka 4.0 removed them)
    9: (0, 10),  # OffsetFetch: v0 kept
    19: (0, 7),  # CreateTopics: v0-1 kept
    20: (0, 6),  # DeleteTopics: v0 kept
    23: (0, 4),  # OffsetForLeaderEpoch: v0-1 kept
    28: (0, 5),  # TxnOffsetCommit: KIP-1319's v6 not served
    32: (0, 4),  # DescribeConfigs: v0 kept
}


def _api_versions(version: int, body: ApiVersionsRequest) -> object:
    return call(loading_broker(), 18, version, body)


def test_every_served_api_advertises_kafka_44s_range_or_a_named_difference() -> None:
    resp = _api_versions(4, ApiVersionsRequest("groupcoord-test", "1"))
    ours = {a.api_key: (a.min_version, a.max_version) for a in resp.api_keys}  # type: ignore[attr-defined]
    differ = {k: (r, KAFKA_44.get(k)) for k, r in ours.items() if r != KAFKA_44.get(k)}
    assert differ == {k: (r, KAFKA_44[k]) for k, r in BELOW_KAFKA.items() if k in ours}
    assert set(ours) <= set(KAFKA_44), "an API Kafka 4.4's broker does not advertise"


def test_features_are_advertised_from_v3_and_min_zero_ones_only_from_v4() -> None:
    v4 = _api_versions(4, ApiVersionsRequest("groupcoord-test", "1"))
    supported = {k.name: (k.min_version, k.max_version) for k in v4.supported_features}  # type: ignore[attr-defined]
    finalized = {k.name: k.max_version_level for k in v4.finalized_features}  # type: ignore[attr-defined]
    assert supported["metadata.version"] == (7, 30) and finalized["metadata.version"] == 30
    assert supported["group.version"] == (0, 1) and finalized["group.version"] == 1
    assert supported["share.version"] == (0, 1) and finalized["share.version"] == 1
    assert supported["transaction.version"] == (0, 1) and finalized["transaction.version"] == 1
    assert supported["kraft.version"] == (0, 0) and "kraft.version" not in finalized
    assert v4.finalized_features_epoch == sum(finalized.values())  # type: ignore[attr-defined]
    v3 = _api_versions(3, ApiVersionsRequest("groupcoord-test", "1"))
    # KAFKA-17492: below v4 a supported feature with minimum 0 is left out (Kafka 4.4 answers the same)
    assert [k.name for k in v3.supported_features] == ["metadata.version"]  # type: ignore[attr-defined]
    assert v3.finalized_features == v4.finalized_features  # type: ignore[attr-defined]
    assert _api_versions(2, ApiVersionsRequest()).supported_features == ()  # type: ignore[attr-defined]


def test_v5_cluster_or_node_mismatch_is_rebootstrap_required() -> None:
    ok = _api_versions(5, ApiVersionsRequest("t", "1", cluster_id="groupcoord-cluster", node_id=0))
    assert ok.error_code == 0 and ok.api_keys  # type: ignore[attr-defined]
    unknown = _api_versions(5, ApiVersionsRequest("t", "1"))  # not given: no check
    assert unknown.error_code == 0  # type: ignore[attr-defined]
    for cluster, node in (("other", 0), ("groupcoord-cluster", 7)):
        bad = _api_versions(5, ApiVersionsRequest("t", "1", cluster_id=cluster, node_id=node))
        assert bad.error_code == ErrorCode.REBOOTSTRAP_REQUIRED and bad.api_keys == ()  # type: ignore[attr-defined]


def test_invalid_software_name_gets_invalid_request_without_api_keys() -> None:
    resp = _api_versions(3, ApiVersionsRequest("", ""))
    assert resp.error_code == ErrorCode.INVALID_REQUEST and resp.api_keys == ()  # type: ignore[attr-defined]


def test_produce_v0_to_v2_are_advertised_but_close_the_connection() -> None:
    from groupcoord.protocol.codec import encode_request
    from groupcoord.protocol.messages.produce import ProduceRequest

    broker = loading_broker()
    frame = bytearray(encode_request(0, 3, 1, ProduceRequest(acks=1, timeout_ms=1000))[4:])
    for version in (0, 1, 2):
        frame[2:4] = version.to_bytes(2, "big")
        conn = FakeConn()
        assert broker.dispatcher.dispatch(conn, bytes(frame)) is None  # type: ignore[arg-type]
        assert conn.closed_because is not None
