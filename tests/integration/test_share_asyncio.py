"""groupcoord.share, the asyncio share consumer, against the real server (KIP-932 work queues).

Three consumers on one partition each receive records and, accepting, process every record exactly once; a
released record comes back with its delivery count + 1; a rejected one never does; a consumer that dies
holding records (its process killed) or hangs holding them (its locks expire) has them redelivered to the
others; implicit mode accepts on the next poll; close() releases what was not acknowledged; a full in-flight
window stops fetching until the application acknowledges."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from groupcoord.share import AcknowledgeType, ShareConsumer, ShareConsumerError, ShareRecord, ShareStateError

pytestmark = [pytest.mark.integration, pytest.mark.owns_server]

EARLIEST = ("--topic", "t:1", "--share-auto-offset-reset", "earliest")


def produce(bootstrap: str, n: int, start: int = 0, topic: str = "t") -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "batch.num.messages": 10})
    for i in range(start, start + n):
        p.produce(topic, value=str(i).encode(), key=f"k{i}".encode(), partition=0)
    assert p.flush(30) == 0


async def collect(
    c: ShareConsumer, n: int, timeout: float = 30.0, ack: AcknowledgeType | None = None
) -> list[ShareRecord]:
    """Poll until ``n`` records came (or the deadline passed); acknowledge each with ``ack`` if given."""
    out: list[ShareRecord] = []
    deadline = asyncio.get_running_loop().time() + timeout
    while len(out) < n and asyncio.get_running_loop().time() < deadline:
        for r in await c.poll(0.5):
            out.append(r)
            if ack is not None:
                c.acknowledge(r, ack)
    return out


async def test_three_consumers_one_partition_accept_processes_each_record_once(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory(*EARLIEST)
    total = 300
    produce(srv.bootstrap, total)
    seen: list[Counter[int]] = [Counter(), Counter(), Counter()]
    done = asyncio.Event()
    joined: list[int] = []

    async def worker(i: int) -> None:
        async with ShareConsumer(
            srv.bootstrap, "g", ["t"], acknowledgement_mode="explicit", max_poll_records=5
        ) as c:
            joined.append(i)
            while len(joined) < 3:  # all three are members before anyone takes work
                await asyncio.sleep(0.05)
            async for rec in c:
                seen[i][int(rec.value or b"-1")] += 1
                assert rec.delivery_count == 1 and rec.key == f"k{int(rec.value or b'0')}".encode()
                await asyncio.sleep(0.005)  # a slow worker: the others get their share meanwhile
                c.acknowledge(rec, AcknowledgeType.ACCEPT)
                if done.is_set():
                    break
            await c.commit()

    tasks = [asyncio.create_task(worker(i)) for i in range(3)]
    deadline = asyncio.get_running_loop().time() + 90
    while asyncio.get_running_loop().time() < deadline and len(set().union(*seen)) < total:
        await asyncio.sleep(0.2)
        for t in tasks:
            if t.done():
                t.result()
    done.set()
    produce(srv.bootstrap, 3, start=total)  # wake the iterators blocked in a long poll
    await asyncio.wait_for(asyncio.gather(*tasks), 60)
    every = seen[0] + seen[1] + seen[2]
    assert set(range(total)) <= set(every)
    assert max(every.values()) == 1, "an accepted record was delivered twice"
    assert all(seen), f"every consumer should have received records: {[len(s) for s in seen]}"


async def test_release_redelivers_with_delivery_count_plus_one_and_reject_archives(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory(*EARLIEST)
    produce(srv.bootstrap, 4)
    async with ShareConsumer(srv.bootstrap, "g", ["t"], acknowledgement_mode="explicit") as c:
        first = await collect(c, 4)
        assert sorted(int(r.value or b"") for r in first) == [0, 1, 2, 3]
        assert all(r.delivery_count == 1 for r in first)
        kinds = {0: AcknowledgeType.RELEASE, 1: AcknowledgeType.REJECT}
        for r in first:
            c.acknowledge(r, kinds.get(int(r.value or b""), AcknowledgeType.ACCEPT))
        assert set((await c.commit()).values()) == {0}
        again = await collect(c, 1, ack=AcknowledgeType.ACCEPT)
        assert [(int(r.value or b""), r.delivery_count) for r in again] == [(0, 2)]
        await c.commit()
        assert await collect(c, 1, timeout=3.0) == []  # the rejected record is archived, never redelivered


async def test_acknowledge_rules_as_java(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory(*EARLIEST)
    produce(srv.bootstrap, 2)
    async with ShareConsumer(srv.bootstrap, "g", ["t"]) as c:  # implicit mode
        recs = await collect(c, 1)
        with pytest.raises(ShareStateError, match="explicit"):
            c.acknowledge(recs[0], AcknowledgeType.ACCEPT)
    async with ShareConsumer(srv.bootstrap, "g2", ["t"], acknowledgement_mode="explicit") as c:
        recs = await collect(c, 2)
        c.acknowledge(recs[0])
        with pytest.raises(ShareStateError, match="not in flight"):
            c.acknowledge(recs[0])  # twice
    with pytest.raises(ShareStateError, match="closed"):
        await c.poll(0.1)


async def test_implicit_mode_accepts_on_the_next_poll(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory(*EARLIEST)
    produce(srv.bootstrap, 10)
    acked: list[tuple[int, ...]] = []
    c = ShareConsumer(
        srv.bootstrap,
        "g",
        ["t"],
        on_acknowledged=lambda t, p, offsets, err: acked.append(offsets) if not err else None,
    )
    await c.start()
    try:
        got = await collect(c, 10)
        assert sorted(r.offset for r in got) == list(range(10))
        assert acked == []  # nothing sent yet: the records are accepted by the next poll
        await c.poll(0.5)  # accepts what the previous polls delivered and carries it on this fetch
        assert sorted(o for offsets in acked for o in offsets) == list(range(10))
    finally:
        await c.close()
    # nobody gets them again: a second consumer of the group sees nothing
    async with ShareConsumer(srv.bootstrap, "g", ["t"]) as other:
        assert await collect(other, 1, timeout=3.0) == []


async def test_close_releases_what_was_not_acknowledged(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory(*EARLIEST)
    produce(srv.bootstrap, 6)
    c = await ShareConsumer(
        srv.bootstrap, "g", ["t"], acknowledgement_mode="explicit", max_poll_records=3
    ).start()
    got = await collect(c, 3)
    c.acknowledge(got[0], AcknowledgeType.ACCEPT)
    await c.close()  # accepts got[0]; releases got[1:] and anything fetched but never delivered
    async with ShareConsumer(srv.bootstrap, "g", ["t"], acknowledgement_mode="explicit") as other:
        rest = await collect(other, 5, ack=AcknowledgeType.ACCEPT)
        assert sorted(r.offset for r in rest) == [o for o in range(6) if o != got[0].offset]
        counts = {r.offset: r.delivery_count for r in rest}
        assert all(counts[r.offset] == 2 for r in got[1:])  # delivered once before, released by close()
        await other.commit()


async def test_in_flight_limit_holds_back_fetching_until_acknowledged(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory(*EARLIEST)
    produce(srv.bootstrap, 20)
    async with ShareConsumer(
        srv.bootstrap, "g", ["t"], acknowledgement_mode="explicit", max_poll_records=10, max_in_flight=4
    ) as c:
        held = await collect(c, 4)
        assert len(held) == 4
        assert await c.poll(1.0) == []  # the window is full: nothing more until the application acknowledges
        assert c.delivered_unacknowledged == 4

        async def ack_later() -> None:
            await asyncio.sleep(0.3)
            c.acknowledge(held[0])

        task = asyncio.create_task(ack_later())
        more = await c.poll(30.0)  # waits for the acknowledgement, then delivers one more
        await task
        assert len(more) == 1 and more[0].offset not in {r.offset for r in held}


async def test_hung_consumer_holding_records_sees_them_redelivered_after_the_lock(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory(*EARLIEST, "--group-share-record-lock-duration-ms", "1000")
    produce(srv.bootstrap, 3)
    async with ShareConsumer(srv.bootstrap, "g", ["t"], acknowledgement_mode="explicit") as holder:
        held = await collect(holder, 3)
        assert sorted(r.offset for r in held) == [0, 1, 2]
        # the holder stays a member but never acknowledges: after the 1 s lock the others get the records
        async with ShareConsumer(srv.bootstrap, "g", ["t"], acknowledgement_mode="explicit") as other:
            got = await collect(other, 3)
            assert sorted((r.offset, r.delivery_count) for r in got) == [(0, 2), (1, 2), (2, 2)]
            # the holder's late acknowledgement is refused: the record is the other consumer's now
            holder.acknowledge(held[0])
            assert set((await holder.commit()).values()) == {121}  # INVALID_RECORD_STATE
            for r in got:
                other.acknowledge(r)
            assert set((await other.commit()).values()) == {0}


WORKER = """
import asyncio, sys
from groupcoord.share import ShareConsumer
async def main():
    c = await ShareConsumer(sys.argv[1], "g", ["t"], acknowledgement_mode="explicit", max_poll_records=5).start()
    got = []
    while len(got) < 5:
        got += await c.poll(1.0)
    print(" ".join(str(r.offset) for r in got), flush=True)
    await asyncio.sleep(3600)  # holds them until killed
asyncio.run(main())
"""


async def test_killed_consumer_process_has_its_records_redelivered(server_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory(*EARLIEST, "--group-share-record-lock-duration-ms", "3000")
    produce(srv.bootstrap, 20)
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    proc = subprocess.Popen([sys.executable, str(script), srv.bootstrap], stdout=subprocess.PIPE, text=True)
    try:
        line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), 60)  # type: ignore[union-attr]
        held = {int(x) for x in line.split()}
        assert len(held) >= 5
    finally:
        os.kill(proc.pid, signal.SIGKILL)  # no close(), no leave: its connection just drops
        proc.wait(30)
    async with ShareConsumer(srv.bootstrap, "g", ["t"], acknowledgement_mode="explicit") as c:
        got = await collect(c, 20, timeout=60, ack=AcknowledgeType.ACCEPT)
        await c.commit()
    assert sorted(r.offset for r in got) == list(range(20))
    counts = {r.offset: r.delivery_count for r in got}
    assert all(counts[o] == 2 for o in held), "what the killed consumer held is redelivered, counted twice"


async def test_cancelled_task_without_close_has_its_records_redelivered(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory(*EARLIEST, "--group-share-record-lock-duration-ms", "2000")
    produce(srv.bootstrap, 5)
    holder = ShareConsumer(srv.bootstrap, "g", ["t"], acknowledgement_mode="explicit")
    await holder.start()
    held = await collect(holder, 5)
    if holder.heartbeats is not None:
        holder.heartbeats.cancel()  # the task that owned the consumer is gone: nobody heartbeats or closes
    for node in list(holder.cluster.nodes.values()):
        node.conn.writer.transport.abort()
    async with ShareConsumer(srv.bootstrap, "g", ["t"], acknowledgement_mode="explicit") as c:
        got = await collect(c, 5, timeout=60, ack=AcknowledgeType.ACCEPT)
        await c.commit()
    assert sorted((r.offset, r.delivery_count) for r in got) == sorted((r.offset, 2) for r in held)
    with contextlib.suppress(Exception):
        await holder.cluster.close()


async def test_kill_9_of_the_server_under_load_exact_accounting(server_factory) -> None:  # type: ignore[no-untyped-def]
    """Three consumers accept records (each commit() returns once they are durable) while the server is
    killed -9 mid-stream and restarted. Afterwards every record was accepted by a commit the broker answered,
    none twice; the only exception is a record whose commit was cut off by the kill (no answer either way):
    it may have been made durable before the kill (then it is never redelivered) or not (then it comes back)."""
    srv = server_factory(*EARLIEST)
    total = 400
    produce(srv.bootstrap, total)
    committed: Counter[int] = Counter()  # accepted by a commit() the broker answered with no error
    unanswered: set[int] = set()  # in a commit() the kill cut off: durable or not, nobody knows
    stop = asyncio.Event()

    async def worker() -> None:
        while not stop.is_set():
            c = ShareConsumer(
                srv.bootstrap,
                "g",
                ["t"],
                acknowledgement_mode="explicit",
                max_poll_records=10,
                request_timeout_s=10,
            )
            try:
                await c.start(timeout=60)
                while not stop.is_set():
                    batch = await c.poll(0.5)
                    for r in batch:
                        c.acknowledge(r, AcknowledgeType.ACCEPT)
                    if batch:
                        try:
                            result = await c.commit()
                        except Exception:
                            unanswered.update(int(r.value or b"") for r in batch)
                            raise
                        if set(result.values()) == {0}:
                            for r in batch:
                                committed[int(r.value or b"")] += 1
            except Exception:
                await asyncio.sleep(0.2)  # the server went away: a new consumer joins once it is back
            finally:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(c.close(timeout=5), 10)

    tasks = [asyncio.create_task(worker()) for _ in range(3)]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while loop.time() < deadline and len(committed) < total // 4:
        await asyncio.sleep(0.05)
    assert committed, "nothing was committed before the kill"
    srv.kill()
    await asyncio.to_thread(srv.start)
    deadline = loop.time() + 120
    while loop.time() < deadline and len(set(committed) | unanswered) < total:
        await asyncio.sleep(0.2)
    stop.set()
    await asyncio.wait_for(asyncio.gather(*tasks), 60)
    async with ShareConsumer(srv.bootstrap, "g", ["t"], acknowledgement_mode="explicit") as last:
        for r in await collect(last, total, timeout=5.0, ack=AcknowledgeType.ACCEPT):
            committed[int(r.value or b"")] += 1  # anything still available: only unanswered ones may be
        assert set((await last.commit()).values()) <= {0}
    missing = set(range(total)) - set(committed)
    assert missing <= unanswered, f"lost: {sorted(missing - unanswered)[:20]}"
    assert max(committed.values()) == 1, "a record was accepted twice by durable commits"


async def test_one_consumer_rides_through_a_server_restart(server_factory) -> None:  # type: ignore[no-untyped-def]
    """The same ShareConsumer object goes on after kill -9 and restart: the heartbeat rejoins (the restarted
    coordinator fences its old epoch or has lost the member), the share session opens again at epoch 0, and
    the records not accepted before the kill come to it again; none accepted before comes back."""
    srv = server_factory(*EARLIEST)
    produce(srv.bootstrap, 10)
    async with ShareConsumer(
        srv.bootstrap, "g", ["t"], acknowledgement_mode="explicit", max_poll_records=4, request_timeout_s=10
    ) as c:
        first = await collect(c, 4, ack=AcknowledgeType.ACCEPT)
        assert set((await c.commit()).values()) == {0}
        srv.kill()
        await asyncio.to_thread(srv.start)
        produce(srv.bootstrap, 5, start=10)
        rest: list[ShareRecord] = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        while loop.time() < deadline and len(rest) < 11:
            with contextlib.suppress(Exception):  # the first polls may meet the dead connection
                batch = await c.poll(0.5)
                for r in batch:
                    c.acknowledge(r)
                rest += batch
                if batch:
                    await c.commit()
    accepted = Counter(r.offset for r in first + rest)
    assert set(accepted) == set(range(15)) and max(accepted.values()) == 1


async def test_close_from_another_task_ends_the_iterator(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory(*EARLIEST)
    c = await ShareConsumer(srv.bootstrap, "g", ["t"]).start()
    seen: list[ShareRecord] = []

    async def consume() -> None:
        async for r in c:
            seen.append(r)

    task = asyncio.create_task(consume())
    produce(srv.bootstrap, 3)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while len(seen) < 3 and loop.time() < deadline:
        await asyncio.sleep(0.1)
    await c.close()
    await asyncio.wait_for(task, 30)  # ends without an error
    assert [r.offset for r in seen] == [0, 1, 2]
    async with ShareConsumer(srv.bootstrap, "g", ["t"]) as other:  # close() accepted them (implicit mode)
        assert await collect(other, 1, timeout=3.0) == []


EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "work_queue.py"


async def test_the_docs_work_queue_example_runs_each_job_once(server_factory) -> None:  # type: ignore[no-untyped-def]
    """docs/examples/work_queue.py as the docs tell a newcomer to run it: 30 jobs, three worker processes;
    every job is accepted once, the flaky ones (multiples of 7) after a release, with delivery count 2."""
    srv = server_factory("--share-auto-offset-reset", "earliest", "--topic", "jobs:1")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    put = await asyncio.create_subprocess_exec(
        sys.executable, str(EXAMPLE), "put", "--bootstrap", srv.bootstrap, "--jobs", "30", env=env
    )
    assert await asyncio.wait_for(put.wait(), 60) == 0
    lines: list[dict[str, Any]] = []

    async def read(proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        async for raw in proc.stdout:
            lines.append(json.loads(raw))

    workers = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            str(EXAMPLE),
            "work",
            "--bootstrap",
            srv.bootstrap,
            "--name",
            f"w{i}",
            stdout=asyncio.subprocess.PIPE,
            env=env,
        )
        for i in range(3)
    ]
    readers = [asyncio.create_task(read(w)) for w in workers]
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 90
        while loop.time() < deadline and len({x["job"] for x in lines if x["outcome"] == "ACCEPT"}) < 30:
            await asyncio.sleep(0.2)
    finally:
        for w in workers:
            with contextlib.suppress(ProcessLookupError):
                w.send_signal(signal.SIGTERM)
        codes = [await asyncio.wait_for(w.wait(), 60) for w in workers]
        await asyncio.gather(*readers)
    assert codes == [0, 0, 0]  # SIGTERM closes cleanly
    accepted = Counter(x["job"] for x in lines if x["outcome"] == "ACCEPT")
    assert set(accepted) == set(range(30)) and max(accepted.values()) == 1
    released = sorted((x["job"], x["delivery_count"]) for x in lines if x["outcome"] == "RELEASE")
    assert released == [(j, 1) for j in range(0, 30, 7)]
    assert all(
        x["delivery_count"] == (2 if x["job"] % 7 == 0 else 1) for x in lines if x["outcome"] == "ACCEPT"
    )


async def test_delivery_count_limit_archives(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory(*EARLIEST, "--group-share-delivery-count-limit", "3")
    produce(srv.bootstrap, 1)
    async with ShareConsumer(srv.bootstrap, "g", ["t"], acknowledgement_mode="explicit") as c:
        counts = []
        for _ in range(3):
            [r] = await collect(c, 1, ack=AcknowledgeType.RELEASE)
            counts.append(r.delivery_count)
            await c.commit()
        assert counts == [1, 2, 3]
        assert await collect(c, 1, timeout=3.0) == []  # archived after its third delivery


async def test_transaction_markers_are_acknowledged_as_gaps(server_factory) -> None:  # type: ignore[no-untyped-def]
    """A committed transaction leaves a control record (its marker) at an offset the share partition hands
    out with the data; the consumer delivers only the data records and acknowledges the marker as GAP, as
    Kafka's ShareCompletedFetch does, so the whole range is settled."""
    srv = server_factory(*EARLIEST)
    p = Producer({"bootstrap.servers": srv.bootstrap, "transactional.id": "tx"})
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(3):
        p.produce("t", value=str(i).encode(), partition=0)
    p.commit_transaction(30)
    produce(srv.bootstrap, 1, start=3)  # offsets 0-2 data, 3 the marker, 4 a plain record
    acked: dict[int, int] = {}

    def on_ack(topic: str, partition: int, offsets: tuple[int, ...], error: int) -> None:
        acked.update(dict.fromkeys(offsets, error))

    async with ShareConsumer(srv.bootstrap, "g", ["t"], on_acknowledged=on_ack) as c:
        got = await collect(c, 4)
        assert [(r.offset, r.value) for r in got] == [(0, b"0"), (1, b"1"), (2, b"2"), (4, b"3")]
        await c.commit()
    assert acked == dict.fromkeys(range(5), 0)  # 3 went as GAP, the rest as ACCEPT; all applied


async def test_a_broker_without_share_groups_is_a_clear_error(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory("--topic", "t:1", "--group-share-enable", "false")
    c = ShareConsumer(srv.bootstrap, "g", ["t"])
    with pytest.raises(ShareConsumerError, match="SHARE_GROUP_HEARTBEAT"):
        await c.start(timeout=30)
    with pytest.raises(ShareConsumerError):
        await c.poll(0.1)
    await c.close()
