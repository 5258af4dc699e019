"""Fault options `drop_response` and `versions`, and the `max_version` cap ("pretend to be an older broker"),
observed with real clients where one reacts (aiokafka, kafka-python) and with raw frames otherwise."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.structs import OffsetAndMetadata, TopicPartition
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic
from kafka.errors import TopicAlreadyExistsError

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.codec import decode_response, encode_request
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.api_versions import ApiVersionsRequest
from groupcoord.protocol.messages.list_groups import ListGroupsRequest
from tests.integration.helpers import RawClient

pytestmark = pytest.mark.integration


def _raw(coord) -> RawClient:  # type: ignore[no-untyped-def]
    host, port = coord.bootstrap.rsplit(":", 1)
    return RawClient(host, int(port))


async def _in_thread(fn, *args):  # type: ignore[no-untyped-def]
    return await asyncio.to_thread(fn, *args)


# ----------------------------------------------------------------------------------- drop_response


async def test_drop_response_handles_the_commit_and_the_client_times_out_and_retries(groupcoord) -> None:  # type: ignore[no-untyped-def]
    c = AIOKafkaConsumer(
        bootstrap_servers=groupcoord.bootstrap,
        group_id="dropped",
        enable_auto_commit=False,
        request_timeout_ms=1000,
    )
    await c.start()
    tp = TopicPartition("t", 0)
    c.assign([tp])
    try:
        groupcoord.record()
        fault = groupcoord.fault("OffsetCommit", drop_response=True, group="dropped")
        # aiokafka's request times out (RequestTimedOutError), it marks the coordinator dead, finds it
        # again and sends the commit once more, which is answered
        await c.commit({tp: OffsetAndMetadata(7, "")})
        assert fault.fired == 1
        first, *retries = groupcoord.recorded("OffsetCommit", group="dropped")
        assert first.injected and first.response is None
        assert retries and not retries[0].injected and retries[0].response is not None
        assert await c.committed(tp) == 7
    finally:
        await c.stop()


async def test_drop_response_sends_nothing_and_the_next_request_is_answered(groupcoord) -> None:  # type: ignore[no-untyped-def]
    groupcoord.fault("ListGroups", drop_response=True)
    raw = _raw(groupcoord)
    try:
        raw.send_raw(encode_request(ApiKey.LIST_GROUPS, 4, 1, ListGroupsRequest(), "raw-test"))
        raw.correlation = 1
        response = await _in_thread(raw.request, ApiKey.LIST_GROUPS, 4, ListGroupsRequest())
        assert response.error_code == 0  # correlation id 2: the first one was never answered
    finally:
        raw.close()


# ---------------------------------------------------------------------------------------- versions


async def test_a_fault_with_versions_takes_only_requests_of_those_versions(groupcoord) -> None:  # type: ignore[no-untyped-def]
    fault = groupcoord.fault("ListGroups", error="COORDINATOR_NOT_AVAILABLE", versions=(4,), count=None)
    raw = _raw(groupcoord)
    try:
        assert (await _in_thread(raw.request, ApiKey.LIST_GROUPS, 3, ListGroupsRequest())).error_code == 0
        v4 = await _in_thread(raw.request, ApiKey.LIST_GROUPS, 4, ListGroupsRequest())
        assert v4.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
        assert fault.fired == 1
    finally:
        raw.close()


# ------------------------------------------------------------------------------------- max_version


def _advertised(raw: RawClient, api: int) -> int:
    table = raw.request(ApiKey.API_VERSIONS, 3, ApiVersionsRequest("raw-test", "1"))
    return next(a.max_version for a in table.api_keys if a.api_key == api)


async def test_max_version_lowers_what_api_versions_advertises_and_refuses_requests_above(groupcoord) -> None:  # type: ignore[no-untyped-def]
    raw = _raw(groupcoord)
    try:
        real_max = await _in_thread(_advertised, raw, ApiKey.LIST_GROUPS)
        assert real_max >= 3
        groupcoord.max_version("ListGroups", 2)
        assert await _in_thread(_advertised, raw, ApiKey.LIST_GROUPS) == 2
        assert await _in_thread(_advertised, raw, ApiKey.JOIN_GROUP) > 2  # other APIs keep theirs
        # refused as any version we do not speak: UNSUPPORTED_VERSION at the nearest version (docs/differences.md)
        raw.send_raw(encode_request(ApiKey.LIST_GROUPS, 3, 99, ListGroupsRequest(), "raw-test"))
        corr, refused = decode_response(await _in_thread(raw.read_frame), ApiKey.LIST_GROUPS, 2)
        assert (corr, refused.error_code) == (99, ErrorCode.UNSUPPORTED_VERSION)
        assert (await _in_thread(raw.request, ApiKey.LIST_GROUPS, 2, ListGroupsRequest())).error_code == 0
        groupcoord.max_version("ListGroups", None)
        assert await _in_thread(_advertised, raw, ApiKey.LIST_GROUPS) == real_max
        assert (await _in_thread(raw.request, ApiKey.LIST_GROUPS, 3, ListGroupsRequest())).error_code == 0
    finally:
        raw.close()


async def test_max_version_outside_our_range_is_refused(groupcoord) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="within"):
        groupcoord.max_version("JoinGroup", 99)


def _kafka_python_joins(bootstrap: str, group: str) -> None:
    # the topic exists before the consumer subscribes: with an auto-created one the leader could assign before
    # its metadata had the topic and wait for a metadata refresh to rejoin (failed CI twice); metadata is
    # still refreshed every 500 ms (kafka-python's default is 5 minutes)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic("t", 1, 1)])
    except TopicAlreadyExistsError:
        pass
    finally:
        admin.close()
    # one record for the consumer to read: its poll then returns as soon as it has joined and fetched, so the
    # poll can be given the whole deadline (see below)
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    try:
        producer.send("t", b"joined").get(timeout=30)
    finally:
        producer.close()
    c = KafkaConsumer(
        "t",
        bootstrap_servers=bootstrap,
        group_id=group,
        session_timeout_ms=10_000,
        metadata_max_age_ms=500,
        auto_offset_reset="earliest",
    )
    try:
        # One long poll, not many short ones: kafka-python 3.0 leaves a JoinGroup->SyncGroup round in flight
        # when a poll's timeout passes, and when that round completes between two polls of a rejoin that the
        # metadata (not the coordinator) asked for, no later poll takes its result: the consumer never gets
        # its assignment. With poll(timeout_ms=100) that happened whenever the round took over 100 ms, as it
        # does on a loaded machine (the in-process server shares this process's GIL).
        deadline = time.monotonic() + 60
        records: dict = {}
        while not records:  # records come only once it has joined and been assigned t-0
            left_ms = int((deadline - time.monotonic()) * 1000)
            assert left_ms > 0, "kafka-python did not join and read the record"
            records = c.poll(timeout_ms=left_ms)
        assert c.assignment() == {TopicPartition("t", 0)}
    finally:
        c.close()


async def test_kafka_python_negotiates_down_to_a_capped_join_group_version(groupcoord) -> None:  # type: ignore[no-untyped-def]
    groupcoord.record()
    await _in_thread(_kafka_python_joins, groupcoord.bootstrap, "new-broker")
    newest = {r.version for r in groupcoord.recorded("JoinGroup", group="new-broker")}
    assert max(newest) > 2, "the client speaks JoinGroup above v2 to an unrestricted coordinator"
    groupcoord.max_version("JoinGroup", 2)
    groupcoord.max_version("SyncGroup", 1)
    await _in_thread(_kafka_python_joins, groupcoord.bootstrap, "old-broker")
    joins = groupcoord.recorded("JoinGroup", group="old-broker")
    syncs = groupcoord.recorded("SyncGroup", group="old-broker")
    assert joins and syncs
    assert {r.version for r in joins} == {2} and {r.version for r in syncs} == {1}
    assert not any(r.injected for r in joins + syncs), "nothing was refused: the client negotiated"
