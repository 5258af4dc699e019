"""/metrics beyond groups: process_*, build info, connections, bytes, log size, event-loop lag, offset
deletions, and kafka_exporter's lag -1 for a partition without a committed offset; against a real server."""

from __future__ import annotations

import asyncio
import logging
import platform
import struct
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT, free_port
from tests.integration.helpers import wait_for
from tests.integration.lag_fixture import lagging_group
from tests.integration.test_ops_metrics import samples, value

pytestmark = [pytest.mark.integration]
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)

SOCKET = "kafka_server_socket_server_metrics_"


def api_versions_v0_frame(correlation: int) -> bytes:
    body = struct.pack(">hhih", 18, 0, correlation, -1)  # ApiVersions v0, null client id, empty body
    return struct.pack(">i", len(body)) + body


async def test_process_build_connection_byte_and_loop_lag_metrics(server_factory) -> None:
    mport = free_port()
    srv = server_factory("--metrics-port", str(mport))
    before = samples(mport)
    for name in ("process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds",
                 "process_max_fds", "process_start_time_seconds"):  # fmt: skip
        assert (name, ()) in before, f"{name} is not on /metrics"
    start = before[("process_start_time_seconds", ())]
    assert time.time() - 600 < start <= time.time() + 1
    assert before[("process_resident_memory_bytes", ())] > 1_000_000
    build = [k for k in before if k[0] == "groupcoord_build_info"]
    assert build == [("groupcoord_build_info", (("python", platform.python_version()), ("version", "0.1.0")))]
    assert before[build[0]] == 1
    await wait_for(
        lambda: (value(mport, "groupcoord_event_loop_lag_seconds_count") or 0) >= 2, 30, "loop lag samples"
    )
    assert value(mport, "groupcoord_event_loop_lag_last_seconds") is not None

    # nobody else talks to this server: one raw ApiVersions moves the byte counters by exactly its frames
    await wait_for(lambda: value(mport, SOCKET + "connection_count") == 0, 30, "no client connections")
    in0 = value(mport, SOCKET + "incoming_byte_total")
    out0 = value(mport, SOCKET + "outgoing_byte_total")
    reader, writer = await asyncio.open_connection(srv.host, srv.port)
    try:
        request = api_versions_v0_frame(7)
        writer.write(request)
        (size,) = struct.unpack(">i", await reader.readexactly(4))
        await reader.readexactly(size)
        assert value(mport, SOCKET + "connection_count") == 1
        assert value(mport, SOCKET + "incoming_byte_total") == in0 + len(request)
        assert value(mport, SOCKET + "outgoing_byte_total") == out0 + 4 + size
        # two frames in one write are two frames in and two answers out
        writer.write(api_versions_v0_frame(8) + api_versions_v0_frame(9))
        for _ in range(2):
            (more,) = struct.unpack(">i", await reader.readexactly(4))
            await reader.readexactly(more)
        assert value(mport, SOCKET + "incoming_byte_total") == in0 + 3 * len(request)
        assert value(mport, SOCKET + "outgoing_byte_total") == out0 + 3 * (4 + size)
    finally:
        writer.close()
    await wait_for(lambda: value(mport, SOCKET + "connection_count") == 0, 30, "the connection to close")


def cli(bootstrap: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "groupcoord.server", "groups", "--bootstrap-server", bootstrap, *args],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


async def test_log_size_offset_deletions_and_lag_of_an_uncommitted_partition(server_factory) -> None:
    mport = free_port()
    srv = server_factory("--metrics-port", str(mport))
    consumer = await lagging_group(srv.bootstrap, "sized", "deleter")
    try:
        size0 = value(mport, "kafka_log_log_size", topic="sized", partition="0")
        size1 = value(mport, "kafka_log_log_size", topic="sized", partition="1")
        assert size0 is not None and size1 is not None and size0 > size1 > 0  # 10 records vs 4
    finally:
        await consumer.stop()
    assert value(mport, "kafka_server_group_coordinator_metrics_offset_deletion_count_total") == 0
    await wait_for(
        lambda: value(mport, "kafka_consumergroup_members", consumergroup="deleter") == 0, 30, "group empty"
    )
    done = cli(srv.bootstrap, "delete-offsets", "--group", "deleter", "--topic", "sized:1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert value(mport, "kafka_server_group_coordinator_metrics_offset_deletion_count_total") == 1
    assert value(mport, "kafka_server_group_coordinator_metrics_offset_count") == 1

    # kafka_exporter: partition 1 of a topic the group commits to has no offset now: current offset and lag -1,
    # the offset sum counts the -1, the lag sum does not
    lag = {"consumergroup": "deleter", "topic": "sized"}
    assert value(mport, "kafka_consumergroup_lag", partition="1", **lag) == -1
    assert value(mport, "kafka_consumergroup_current_offset", partition="1", **lag) == -1
    assert value(mport, "kafka_consumergroup_lag", partition="0", **lag) == 7
    assert value(mport, "kafka_consumergroup_lag_sum", **lag) == 7
    assert value(mport, "kafka_consumergroup_current_offset_sum", **lag) == 3 - 1

    # the whole topic: only partition 0 still had an offset, so one more deletion (Kafka counts tombstones)
    done = cli(srv.bootstrap, "delete-offsets", "--group", "deleter", "--topic", "sized")
    assert done.returncode == 0, done.stdout + done.stderr
    assert value(mport, "kafka_server_group_coordinator_metrics_offset_deletion_count_total") == 2
    # no committed offset left on the topic: no series for it at all (kafka_exporter skips unconsumed topics)
    assert value(mport, "kafka_consumergroup_lag", partition="1", **lag) is None
    assert value(mport, "kafka_consumergroup_lag_sum", **lag) is None
