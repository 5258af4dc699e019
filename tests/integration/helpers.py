"""Small helpers for black-box tests against the real server."""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from groupcoord.protocol.codec import decode_response, encode_request


async def wait_for(predicate: Callable[[], bool], timeout: float, what: str, step: float = 0.1) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(step)


class HeartbeatCounter:
    """Counts an aiokafka consumer's successful heartbeats, so a test can wait for "the member has been
    heard from since X" instead of sleeping. A success proves the coordinator still knows the member at its
    generation with no rebalance in progress (any of those is an error answer, not a success)."""

    def __init__(self, consumer: Any) -> None:
        self.ok = 0
        coordinator = consumer._coordinator  # aiokafka has no public hook for heartbeat results
        send = coordinator._do_heartbeat

        async def counted() -> bool:
            success = await send()
            if success:
                self.ok += 1
            return success

        coordinator._do_heartbeat = counted


async def stop_aiokafka(*clients: Any) -> None:
    """Stop aiokafka consumers, working around aiokafka 0.14's Fetcher.close: it cancels its fetch tasks and
    awaits each without catching the cancellation, so a task cancelled in its retry back-off (its node was just
    killed: NodeNotReadyError, then `sleep(retry_backoff)`) raises CancelledError out of `stop()` and the rest
    of the close is skipped. That is the client's bug, not the server's; here the close is finished by hand.
    Our own cancellation (the test timed out) still propagates."""
    for c in clients:
        try:
            await c.stop()
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise
            pending = list(getattr(c._fetcher, "_pending_tasks", ()))
            for t in pending:
                t.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            await c._client.close()


def kafka_python_poll(c: Any, timeout_ms: int) -> Any:
    """One poll, first un-wedging kafka-python 3.0.12's group join: `join_group_async` re-awaits its in-flight
    JoinGroup/SyncGroup task only `while self.need_rejoin()`. A leader that rejoined because the metadata
    changed (need_rejoin() True from the assignment snapshot, not from `rejoin_needed`) and whose poll timed
    out mid-join sees need_rejoin() turn False once `_on_join_prepare` clears that snapshot: the task's answer
    is never applied, heartbeats stay disabled, and the member silently expires (seen under load in CI:
    5 members never covered the partitions). A join still in flight means a rejoin is wanted: say so."""
    co = c._coordinator
    if getattr(co, "_join_task", None) is not None and not co.need_rejoin():
        co.rejoin_needed = True
    return c.poll(timeout_ms=timeout_ms)


def wait_for_sync(predicate: Callable[[], bool], timeout: float, what: str, step: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(step)


def exact_cover(assignments: Iterable[Iterable[tuple[str, int]]], expected: set[tuple[str, int]]) -> bool:
    """Every expected partition assigned exactly once, and nothing else."""
    seen: list[tuple[str, int]] = [tp for a in assignments for tp in a]
    return len(seen) == len(set(seen)) and set(seen) == expected


async def gather_bounded(aws: Iterable[Awaitable[Any]], timeout: float) -> list[Any]:
    return await asyncio.wait_for(asyncio.gather(*aws), timeout)


class RawClient:
    """A blocking raw-protocol client: pre-encoded frames in, decoded responses out."""

    def __init__(self, host: str, port: int, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.correlation = 0

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        size = struct.unpack(">i", self._read(4))[0]
        return self._read(size)

    def _read(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed by server")
            out += chunk
        return bytes(out)

    def request(self, api_key: int, version: int, body: Any) -> Any:
        self.correlation += 1
        self.send_raw(encode_request(api_key, version, self.correlation, body, client_id="raw-test"))
        corr, resp = decode_response(self.read_frame(), api_key, version)
        assert corr == self.correlation
        return resp

    def is_closed_by_server(self, timeout: float = 5.0) -> bool:
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False

    def close(self) -> None:
        self.sock.close()


# --- additions for the kafka-python / confluent-kafka / mixed / bad-input suites ---


class PollingThread:
    """A thread that owns one blocking client (kafka-python or confluent-kafka consumer).

    Neither client may be used from two threads at once (confluent's `assignment()` even blocks while another
    thread sits in `poll()`), so everything happens on the owning thread: it builds the client, polls it, and
    after every poll stores `snapshot(client)` in `.state`; `call(fn)` runs `fn(client)` there between polls.
    """

    def __init__(
        self,
        make: Callable[[], Any],
        poll: Callable[[Any], Any],
        snapshot: Callable[[Any], Any],
        on_records: Callable[[Any], None] | None = None,
        name: str = "poller",
    ) -> None:
        import queue
        import threading

        self._make, self._poll, self._snapshot, self._on_records = make, poll, snapshot, on_records
        self._calls: queue.Queue = queue.Queue()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self.state: Any = None
        self.error: BaseException | None = None
        self.client: Any = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import concurrent.futures

        try:
            self.client = self._make()
        except BaseException as exc:
            self.error = exc
            self._ready.set()
            return
        self._ready.set()
        while not self._stop.is_set():
            while not self._calls.empty():
                fn, fut = self._calls.get_nowait()
                if fut.set_running_or_notify_cancel():
                    try:
                        fut.set_result(fn(self.client))
                    except BaseException as exc:
                        fut.set_exception(exc)
            try:
                records = self._poll(self.client)
                if self._on_records is not None and records:
                    self._on_records(records)
                self.state = self._snapshot(self.client)
            except BaseException as exc:  # keep polling; the test sees the error
                self.error = exc
                self._stop.wait(0.1)
        # drain calls made after stop (close)
        while not self._calls.empty():
            fn, fut = self._calls.get_nowait()
            fut.set_exception(concurrent.futures.CancelledError())

    def wait_ready(self, timeout: float = 20.0) -> None:
        if not self._ready.wait(timeout):
            raise AssertionError("client thread did not start")
        if self.error is not None:
            raise self.error

    def call(self, fn: Callable[[Any], Any], timeout: float = 20.0) -> Any:
        import concurrent.futures

        fut: concurrent.futures.Future = concurrent.futures.Future()
        self._calls.put((fn, fut))
        return fut.result(timeout)

    def stop(self, close: Callable[[Any], Any] | None = None, timeout: float = 20.0) -> None:
        """Stop polling; then `close(client)` on the owning thread's behalf (after the loop has ended)."""
        if not self._thread.is_alive():
            return
        self._stop.set()
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise AssertionError("client thread did not stop")
        if close is not None and self.client is not None:
            close(self.client)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()


def journal_events(data_dir: Any, group: str | None = None) -> list[dict[str, Any]]:
    """The server's group event journal (`<data_dir>/journal/`: Parquet segments the server rolled and the
    JSONL files it writes), in `seq` order. Lines are flushed at least every 200 ms while the server runs; the
    last line of a file may be partly written, so it is skipped."""
    from pathlib import Path

    from groupcoord.server.journal.cli import segments
    from groupcoord.server.journal.roll import read_segment

    for _ in range(20):  # a JSONL file listed here may be rolled away before it is read: list again
        try:
            events = [
                e
                for path in segments(Path(data_dir) / "journal")
                for e in read_segment(path)
                if group is None or e.get("group") == group
            ]
        except FileNotFoundError:
            time.sleep(0.05)
            continue
        return sorted(events, key=lambda e: e["seq"])
    raise AssertionError(f"the journal in {data_dir} kept changing while it was read")


def describe_group(host: str, port: int, group: str) -> dict[str, Any]:
    """DescribeGroups v4 over a fresh raw connection: state, protocol, members with decoded assignments."""
    from groupcoord.protocol.consumer import decode_assignment
    from groupcoord.protocol.messages.describe_groups import DescribeGroupsRequest

    c = RawClient(host, port)
    try:
        g = c.request(15, 4, DescribeGroupsRequest(groups=(group,))).groups[0]
    finally:
        c.close()
    members = {}
    for m in g.members:
        parts: set[tuple[str, int]] = set()
        if m.member_assignment:
            for tp in decode_assignment(m.member_assignment).assigned_partitions:
                parts |= {(tp.topic, p) for p in tp.partitions}
        members[m.member_id] = {
            "client_id": m.client_id,
            "instance": m.group_instance_id,
            "partitions": parts,
        }
    return {
        "error": g.error_code,
        "state": g.group_state,
        "protocol_type": g.protocol_type,
        "protocol": g.protocol_data,
        "members": members,
    }


def range_assign(
    member_ids: Iterable[str], topic_partitions: dict[str, int]
) -> dict[str, set[tuple[str, int]]]:
    """Kafka's RangeAssignor for members that all subscribe to every topic: per topic, members sorted by id,
    each gets a contiguous run; the first `partitions % members` get one extra."""
    members = sorted(member_ids)
    out: dict[str, set[tuple[str, int]]] = {m: set() for m in members}
    for topic, count in topic_partitions.items():
        per, extra = divmod(count, len(members))
        start = 0
        for i, m in enumerate(members):
            n = per + (1 if i < extra else 0)
            out[m] |= {(topic, p) for p in range(start, start + n)}
            start += n
    return out
