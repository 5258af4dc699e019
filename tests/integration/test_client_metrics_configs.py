"""CLIENT_METRICS config resources (KIP-714 subscriptions) and ListConfigResources (74) with raw frames:
Kafka 4.4's validation codes and messages (each asked of Kafka 4.4 first), the describe shape, repeated list
items dropped, durability across a restart, what v0 and v1 of ListConfigResources list."""

from __future__ import annotations

import pytest

from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.alter_configs import (
    AlterableConfig,
    AlterConfigsRequest,
    AlterConfigsResource,
)
from groupcoord.protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from groupcoord.protocol.messages.incremental_alter_configs import (
    IncrementalAlterableConfig,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResource,
)
from groupcoord.protocol.messages.list_config_resources import ListConfigResourcesRequest

from .helpers import RawClient

pytestmark = [pytest.mark.integration, pytest.mark.owns_server]
CLIENT_METRICS, GROUP, TOPIC, BROKER, BROKER_LOGGER = 16, 32, 2, 4, 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
DEFAULT_CONFIG, CLIENT_METRICS_CONFIG = 5, 7


def describe(c: RawClient, name: str):  # type: ignore[no-untyped-def]
    req = DescribeConfigsRequest(
        resources=(DescribeConfigsResource(CLIENT_METRICS, name, None),),
        include_synonyms=True,
        include_documentation=True,
    )
    (result,) = c.request(32, 4, req).results
    return result


def alter(c: RawClient, name: str, *ops: tuple[str, int, str | None], resource_type: int = CLIENT_METRICS):  # type: ignore[no-untyped-def]
    req = IncrementalAlterConfigsRequest(
        resources=(
            IncrementalAlterConfigsResource(
                resource_type, name, tuple(IncrementalAlterableConfig(n, op, v) for n, op, v in ops)
            ),
        ),
    )
    (r,) = c.request(44, 1, req).responses
    return r


def listed(c: RawClient, version: int, *types: int) -> list[tuple[str, int]]:
    resp = c.request(74, version, ListConfigResourcesRequest(resource_types=types))
    assert resp.error_code == 0
    return [(r.resource_name, r.resource_type) for r in resp.config_resources]


def values(result) -> dict[str, tuple[str | None, int]]:  # type: ignore[no-untyped-def]
    return {e.name: (e.value, e.config_source) for e in result.configs}


def test_subscriptions_validated_described_listed_and_durable(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory()
    c = RawClient(srv.host, srv.port)
    assert listed(c, 0) == [] and listed(c, 1, CLIENT_METRICS) == []
    # a name never set answers the defaults, as Kafka does
    got = describe(c, "never")
    assert got.error_code == 0
    assert values(got) == {
        "interval.ms": ("300000", DEFAULT_CONFIG),
        "match": ("", DEFAULT_CONFIG),
        "metrics": ("", DEFAULT_CONFIG),
    }
    assert [(e.config_type, e.synonyms) for e in got.configs] == [(3, ()), (7, ()), (7, ())]
    assert got.configs[0].documentation == "Metrics push interval in milliseconds"
    assert describe(c, "").error_code == ErrorCode.INVALID_REQUEST

    refused = {
        ("interval.ms", "10"): (ErrorCode.INVALID_REQUEST, "Invalid value 10 for interval.ms, interval must be "
                                "between 100 and 3600000 (1 hour)"),
        ("interval.ms", "abc"): (ErrorCode.INVALID_CONFIG, "Invalid value abc for configuration interval.ms: "
                                 "Not a number of type INT"),
        ("foo", "1"): (ErrorCode.INVALID_REQUEST, "Unknown client metrics configuration: foo"),
        ("metrics", "a,,b"): (ErrorCode.INVALID_CONFIG, "Configuration 'metrics' values must not be empty."),
        ("match", "foo=bar"): (ErrorCode.INVALID_CONFIG, "Illegal client matching pattern: foo=bar"),
        ("match", "client_id=["): (ErrorCode.INVALID_CONFIG, "Illegal client matching pattern: client_id=["),
        ("match", "client_id="): (ErrorCode.INVALID_CONFIG, "Illegal client matching pattern: client_id="),
    }  # fmt: skip
    for (name, value), (code, message) in refused.items():
        r = alter(c, "m1", (name, SET, value))
        assert (r.error_code, r.error_message) == (code, message), (name, value)
    assert alter(c, "", ("interval.ms", SET, "1000")).error_code == ErrorCode.INVALID_REQUEST
    assert listed(c, 0) == []  # nothing refused was kept

    ok = alter(
        c,
        "m1",
        ("interval.ms", SET, "1000"),
        ("metrics", SET, "org.apache.kafka.producer., org.apache.kafka.producer.,org.apache.kafka.consumer."),
        ("match", SET, "client_id=abc.*,client_software_name=kafka.python"),
    )
    assert ok.error_code == 0, ok.error_message
    assert alter(c, "m2", ("metrics", SET, "a")).error_code == 0
    assert alter(c, "m2", ("metrics", APPEND, "b")).error_code == 0
    got = describe(c, "m1")
    assert values(got) == {
        "interval.ms": ("1000", CLIENT_METRICS_CONFIG),
        "match": ("client_id=abc.*,client_software_name=kafka.python", CLIENT_METRICS_CONFIG),
        "metrics": ("org.apache.kafka.producer.,org.apache.kafka.consumer.", CLIENT_METRICS_CONFIG),
    }
    assert [(s.name, s.value, s.source) for s in got.configs[0].synonyms] == [
        ("interval.ms", "1000", CLIENT_METRICS_CONFIG)
    ]
    assert values(describe(c, "m2"))["metrics"] == ("a,b", CLIENT_METRICS_CONFIG)

    # v0 lists subscriptions only; v1 every type in Kafka's order, or those asked; an unknown type is refused
    assert sorted(listed(c, 0)) == [("m1", CLIENT_METRICS), ("m2", CLIENT_METRICS)]
    assert (
        alter(c, "g1", ("consumer.heartbeat.interval.ms", SET, "6000"), resource_type=GROUP).error_code == 0
    )
    everything = listed(c, 1)
    kinds = [t for _, t in everything]
    assert kinds == sorted(kinds, key=[GROUP, CLIENT_METRICS, BROKER_LOGGER, BROKER, TOPIC].index)
    assert ("g1", GROUP) in everything and ("m1", CLIENT_METRICS) in everything
    assert ("0", BROKER) in everything and ("0", BROKER_LOGGER) in everything  # node id 0
    assert ("__consumer_offsets", TOPIC) in everything
    assert listed(c, 1, GROUP) == [("g1", GROUP)]
    assert c.request(74, 1, ListConfigResourcesRequest(resource_types=(3,))).error_code == (
        ErrorCode.UNSUPPORTED_VERSION
    )
    assert c.request(74, 0, ListConfigResourcesRequest()).config_resources[0].resource_type == CLIENT_METRICS

    # durable; deleting every config removes the subscription; the legacy API replaces all of them
    c.close()
    srv.restart()
    c = RawClient(srv.host, srv.port)
    assert values(describe(c, "m1"))["interval.ms"] == ("1000", CLIENT_METRICS_CONFIG)
    gone = alter(c, "m2", ("metrics", DELETE, None))
    assert gone.error_code == 0
    assert listed(c, 0) == [("m1", CLIENT_METRICS)]
    legacy = AlterConfigsRequest(
        resources=(AlterConfigsResource(CLIENT_METRICS, "m1", (AlterableConfig("metrics", "x"),)),)
    )
    assert c.request(33, 2, legacy).responses[0].error_code == 0
    assert values(describe(c, "m1")) == {
        "interval.ms": ("300000", DEFAULT_CONFIG),
        "match": ("", DEFAULT_CONFIG),
        "metrics": ("x", CLIENT_METRICS_CONFIG),
    }
    c.close()
