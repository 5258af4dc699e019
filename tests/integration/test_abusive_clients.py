"""One abusive client must not stall the others (issue 11): a never-reading client, a flooding client, slow
senders, idle connections and connection floods, each while a real aiokafka group keeps its members.

No timing assertions: "the group keeps its members" means no generation change and no lost partition
over a window longer than the session timeout, which is what a stalled server breaks. The probe's latencies
are printed (run with -s); the bench (`bench/abuse.py`) measures them.
"""

from __future__ import annotations

import asyncio
import logging
import socket

import pytest
from aiokafka import AIOKafkaConsumer

from tests.integration.abusers import (
    ConnectionFlood,
    FastFlooder,
    NeverReader,
    Probe,
    Slowloris,
    api_versions_ok,
    held_open,
    rss_mb,
)
from tests.integration.helpers import exact_cover, wait_for

pytestmark = [pytest.mark.integration]
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)

SESSION_MS = 6000
TOPIC_ARGS = ("--topic", "t:6", *(a for i in range(40) for a in ("--topic", f"filler-{i}:4")))


_GROUPS: list[Group] = []


@pytest.fixture(autouse=True)
async def _stop_groups():  # type: ignore[no-untyped-def]
    """Stops the consumers of a test that failed half-way (a passing test stops them itself)."""
    yield
    while _GROUPS:
        await _GROUPS.pop().stop()


class Group:
    """Two aiokafka consumers of topic t (6 partitions) that must keep their generation and partitions."""

    def __init__(self, bootstrap: str, group: str) -> None:
        _GROUPS.append(self)
        self.stopped = False
        self.consumers = [
            AIOKafkaConsumer(
                "t",
                bootstrap_servers=bootstrap,
                group_id=group,
                session_timeout_ms=SESSION_MS,
                heartbeat_interval_ms=500,
                enable_auto_commit=False,
            )
            for _ in range(2)
        ]
        self.generation = -1

    def _owned(self) -> list[set[tuple[str, int]]]:
        return [{(tp.topic, tp.partition) for tp in c.assignment()} for c in self.consumers]

    def _gens(self) -> set[int]:
        return {c._coordinator.generation for c in self.consumers}

    async def start(self) -> None:
        for c in self.consumers:
            await c.start()
        expected = {("t", p) for p in range(6)}

        def settled() -> bool:
            return len(self._gens()) == 1 and exact_cover(self._owned(), expected)

        await wait_for(settled, 30, "the aiokafka group to settle")
        self.generation = self._gens().pop()

    def kept(self) -> bool:
        return self._gens() == {self.generation} and exact_cover(self._owned(), {("t", p) for p in range(6)})

    async def stop(self) -> None:
        if not self.stopped:
            self.stopped = True
            for c in self.consumers:
                await c.stop()


async def hold(group: Group, seconds: float) -> None:
    """Watch the group for `seconds` (longer than its session timeout): it must never rebalance."""
    for _ in range(int(seconds / 0.25)):
        assert group.kept(), "the aiokafka group rebalanced while another client misbehaved"
        await asyncio.sleep(0.25)


def full_log(srv) -> str:  # type: ignore[no-untyped-def]
    """The whole server log (`srv.log()` keeps only its tail, which 200 closes push the rest out of)."""
    return srv.log_path.read_text(errors="replace")


def start_probe(srv) -> Probe:  # type: ignore[no-untyped-def]
    probe = Probe(srv.host, srv.port, "probe")
    probe.start()
    assert probe.ready.wait(30) and probe.failure is None, probe.failure
    return probe


def check_probe(probe: Probe, what: str) -> None:
    probe.stop()
    assert probe.failure is None, probe.failure
    assert probe.latencies, "the probe sent no heartbeat"
    assert set(probe.errors) == {0}, f"probe heartbeats failed: {set(probe.errors)}"
    print(
        f"\n{what}: probe heartbeats {len(probe.latencies)}, p50 {probe.percentile_ms(0.5):.2f} ms, "
        f"p99 {probe.percentile_ms(0.99):.2f} ms, max {max(probe.latencies) * 1000:.2f} ms"
    )


async def test_never_reading_and_flooding_clients_do_not_stall_the_group_or_grow_memory(
    server_factory,
) -> None:
    srv = server_factory(*TOPIC_ARGS)
    group = Group(srv.bootstrap, "steady")
    await group.start()
    probe = start_probe(srv)
    rss_before = rss_mb(srv.proc.pid)
    abusers = [
        NeverReader(srv.host, srv.port),
        NeverReader(srv.host, srv.port),
        FastFlooder(srv.host, srv.port),
    ]
    for a in abusers:
        a.start()
    try:
        await hold(group, SESSION_MS / 1000 + 2)
        # a newcomer is still served while the abusers push
        assert await asyncio.to_thread(api_versions_ok, srv.host, srv.port)
        rss_during = rss_mb(srv.proc.pid)
    finally:
        for a in abusers:
            a.stop()
    check_probe(probe, "never-reading + flooding")
    sent = sum(a.sent for a in abusers[:2])
    print(
        f"never-readers sent {sent} all-topics Metadata requests; RSS {rss_before:.0f} -> {rss_during:.0f} MB"
    )
    # the never-readers asked for far more answer bytes than the bound lets the server hold for them
    assert sent > 20_000, "the never-reading clients did not get to push much"
    assert rss_during - rss_before < 30, f"server memory grew from {rss_before:.0f} to {rss_during:.0f} MB"
    assert abusers[2].received > 0, "the flooding client that does read was starved"
    assert group.kept()
    await group.stop()


async def test_slow_senders_are_closed_and_idle_connections_expire(server_factory) -> None:
    srv = server_factory(
        "--topic", "t:6", "--request-frame-timeout-ms", "2000", "--connections-max-idle-ms", "3000"
    )  # fmt: skip
    group = Group(srv.bootstrap, "steady")
    await group.start()
    probe = start_probe(srv)
    idle = socket.create_connection((srv.host, srv.port))
    slow = Slowloris(srv.host, srv.port, count=200, every=0.5)
    slow.start()
    try:
        await wait_for(lambda: slow.closed == 200, 60, "the server to close all 200 slow senders")
        await hold(group, 1)
        assert not await asyncio.to_thread(held_open, idle, 10), (
            "an idle connection outlived the idle timeout"
        )
        await hold(group, SESSION_MS / 1000)  # the group's own connections are busy, so they stay
    finally:
        slow.stop()
        idle.close()
    check_probe(probe, "slowloris")
    assert "request frame not complete after 2000 ms" in full_log(srv)
    assert "idle for more than connections.max.idle.ms (3000)" in full_log(srv)
    await group.stop()


async def test_a_connection_flood_from_one_address_is_capped_per_ip(server_factory) -> None:
    srv = server_factory("--topic", "t:6", "--max-connections-per-ip", "50")
    group = Group(srv.bootstrap, "steady")
    await group.start()
    probe = start_probe(srv)
    flood = ConnectionFlood(srv.host, srv.port, count=1000, source="127.0.0.2")
    flood.start()
    try:
        await wait_for(flood.opened.is_set, 120, "the flood to make its connection attempts")
        assert len(flood.socks) > 100, "too few flood connections were accepted to test the cap"
        counts: list[int] = []

        def capped() -> bool:
            counts.append(flood.still_open())
            return counts[-1] == 50

        # the server may still be working through its accept queue: the count settles at the cap
        await wait_for(capped, 60, "the open flood connections to settle at 50")
        print(f"\nflood connections still open after each check: {counts}")
        await hold(group, SESSION_MS / 1000)
        # other addresses are not limited by the flooder's count
        assert await asyncio.to_thread(api_versions_ok, srv.host, srv.port)
    finally:
        flood.stop()
    check_probe(probe, "connection flood")
    assert "max.connections.per.ip (50) reached for 127.0.0.2" in full_log(srv)
    await group.stop()


async def test_max_connections_closes_connections_beyond_the_total(server_factory) -> None:
    srv = server_factory("--max-connections", "5")
    socks = [socket.create_connection((srv.host, srv.port)) for _ in range(5)]
    extra = socket.create_connection((srv.host, srv.port))
    try:
        assert not await asyncio.to_thread(held_open, extra, 5), "a sixth connection was kept"
        assert all(await asyncio.to_thread(lambda: [held_open(s, 0.05) for s in socks]))
        socks.pop().close()

        def reusable() -> bool:  # once the server has seen the close; until then it closes the newcomer
            try:
                return api_versions_ok(srv.host, srv.port)
            except OSError:
                return False

        await wait_for(reusable, 60, "the freed slot to be reusable")
    finally:
        extra.close()
        for s in socks:
            s.close()
    assert "max.connections (5) reached" in full_log(srv)


async def test_a_never_reader_stalled_past_the_idle_timeout_is_dropped_and_its_slot_freed(
    server_factory,
) -> None:
    srv = server_factory("--connections-max-idle-ms", "2000", "--max-connections-per-ip", "1")
    stalled = NeverReader(srv.host, srv.port, source="127.0.0.2")
    stalled.start()
    try:
        await wait_for(
            lambda: "idle for more than connections.max.idle.ms" in full_log(srv), 60, "the idle close"
        )

        def slot_free() -> bool:
            # the per-IP count drops only once the connection is really gone, unsent replies and all
            with socket.create_connection((srv.host, srv.port), source_address=("127.0.0.2", 0)) as s:
                return held_open(s, 0.3)

        await wait_for(lambda: slot_free(), 60, "127.0.0.2's only connection slot to be free again")
    finally:
        stalled.stop()


async def test_one_request_frame_larger_than_the_read_pause_bound_is_read_and_answered(
    server_factory,
) -> None:
    """Reading pauses only behind requests being handled; a lone 3 MB Produce frame must still arrive whole
    (and get the server's MESSAGE_TOO_LARGE for its 3 MB batch, not a client-side timeout)."""
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import MessageSizeTooLargeError

    srv = server_factory("--topic", "big:1")
    producer = AIOKafkaProducer(
        bootstrap_servers=srv.bootstrap, max_request_size=8 << 20, request_timeout_ms=15000, acks=1
    )
    await producer.start()
    try:
        with pytest.raises(MessageSizeTooLargeError):
            await producer.send_and_wait("big", b"x" * (3 << 20), partition=0)
        # and the connection still serves the next, normal request
        meta = await producer.send_and_wait("big", b"small", partition=0)
        assert meta.offset == 0
    finally:
        await producer.stop()
