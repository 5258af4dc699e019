"""Badly behaved clients and a heartbeat probe, as blocking threads over raw sockets (issue 11).

Shared by `tests/integration/test_abusive_clients.py` and `bench/abuse.py`. Threads (not the test's event
loop) so that an abuser blocked in `sendall` costs the measuring side nothing and the probe's latencies are
the server's, not a busy client loop's.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from pathlib import Path

from groupcoord.protocol.codec import decode_response, encode_request
from groupcoord.protocol.messages.api_versions import ApiVersionsRequest
from groupcoord.protocol.messages.heartbeat import HeartbeatRequest
from groupcoord.protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from groupcoord.protocol.messages.metadata import MetadataRequest
from groupcoord.protocol.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment

METADATA, HEARTBEAT, JOIN, SYNC, API_VERSIONS = 3, 12, 11, 14, 18


def all_topics_metadata_frame(correlation: int = 1) -> bytes:
    """Metadata v1 with a null topic list: the answer lists every topic (the issue's abusive request)."""
    return encode_request(METADATA, 1, correlation, MetadataRequest(topics=None), client_id="abuser")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _read_frame(sock: socket.socket) -> bytes:
    def exactly(n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed by server")
            out += chunk
        return bytes(out)

    return exactly(struct.unpack(">i", exactly(4))[0])


def api_versions_ok(host: str, port: int, timeout: float = 10.0) -> bool:
    """A fresh connection's ApiVersions v0 is answered (the issue saw this time out during abuse)."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(encode_request(API_VERSIONS, 0, 7, ApiVersionsRequest(), client_id="fresh"))
        corr, resp = decode_response(_read_frame(s), API_VERSIONS, 0)
        return corr == 7 and resp.error_code == 0


class Probe(threading.Thread):
    """One member of its own group (JoinGroup/SyncGroup v0) that heartbeats every `interval` seconds and
    records each heartbeat's round trip and error code."""

    def __init__(self, host: str, port: int, group: str, interval: float = 0.05, session_ms: int = 10000):
        super().__init__(name=f"probe-{group}", daemon=True)
        self.addr, self.group, self.interval, self.session_ms = (host, port), group, interval, session_ms
        self.latencies: list[float] = []  # seconds
        self.errors: list[int] = []
        self.failure: BaseException | None = None
        self.ready = threading.Event()
        self.stop_event = threading.Event()
        self._corr = 0
        self.pending_since: float | None = None  # perf_counter() of the heartbeat now unanswered, if any

    def _call(self, sock: socket.socket, api: int, body: object) -> object:
        self._corr += 1
        sock.sendall(encode_request(api, 0, self._corr, body, client_id="probe"))
        corr, resp = decode_response(_read_frame(sock), api, 0)
        assert corr == self._corr
        return resp

    def run(self) -> None:
        try:
            with socket.create_connection(self.addr, timeout=30) as sock:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                request = JoinGroupRequest(
                    group_id=self.group,
                    session_timeout_ms=self.session_ms,
                    member_id="",
                    protocol_type="consumer",
                    protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),),
                )
                join = self._call(sock, JOIN, request)
                for _ in range(
                    100
                ):  # COORDINATOR_LOAD_IN_PROGRESS: the listener opens before the state loads
                    if join.error_code != 14:  # type: ignore[attr-defined]
                        break
                    time.sleep(0.1)
                    join = self._call(sock, JOIN, request)
                assert join.error_code == 0, join  # type: ignore[attr-defined]
                gen, me = join.generation_id, join.member_id  # type: ignore[attr-defined]
                sync = self._call(
                    sock,
                    SYNC,
                    SyncGroupRequest(
                        group_id=self.group,
                        generation_id=gen,
                        member_id=me,
                        assignments=(SyncGroupRequestAssignment(member_id=me, assignment=b""),),
                    ),
                )
                assert sync.error_code == 0, sync  # type: ignore[attr-defined]
                self.ready.set()
                hb = HeartbeatRequest(group_id=self.group, generation_id=gen, member_id=me)
                while not self.stop_event.wait(self.interval):
                    t0 = self.pending_since = time.perf_counter()
                    resp = self._call(sock, HEARTBEAT, hb)
                    self.pending_since = None
                    self.latencies.append(time.perf_counter() - t0)
                    self.errors.append(resp.error_code)  # type: ignore[attr-defined]
        except BaseException as exc:  # the test reads it
            self.failure = exc
            self.ready.set()

    def stop(self) -> None:
        self.stop_event.set()
        self.join(30)

    def reset(self) -> None:
        self.latencies, self.errors = [], []

    def percentile_ms(self, p: float) -> float:
        xs = sorted(self.latencies)
        return xs[min(len(xs) - 1, int(len(xs) * p))] * 1000 if xs else float("nan")


class Abuser(threading.Thread):
    """Base: runs `abuse()` until `stop()`; socket errors (the server closing us) end it quietly."""

    def __init__(self, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.stop_event = threading.Event()
        self.closed_by_server = False
        self.sent = 0

    def abuse(self) -> None:
        raise NotImplementedError

    def run(self) -> None:
        try:
            self.abuse()
        except OSError:
            self.closed_by_server = True

    def stop(self) -> None:
        self.stop_event.set()
        self.join(30)


class NeverReader(Abuser):
    """Pipelines all-topics Metadata requests as fast as the server takes them and never reads an answer."""

    def __init__(self, host: str, port: int, batch: int = 512, source: str = "127.0.0.1") -> None:
        super().__init__("never-reader")
        self.addr = (host, port)
        self.source = source
        self.block = all_topics_metadata_frame() * batch
        self.batch = batch

    def abuse(self) -> None:
        with socket.create_connection(self.addr, source_address=(self.source, 0)) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # and reads nothing
            s.settimeout(0.2)
            while not self.stop_event.is_set():
                try:
                    s.sendall(self.block)
                    self.sent += self.batch
                except TimeoutError:
                    continue  # the server stopped reading us: exactly what it should do


class FastFlooder(Abuser):
    """Pipelines all-topics Metadata requests without pause and reads (and drops) every answer: a client
    that is well behaved about reading but wants the whole server."""

    def __init__(self, host: str, port: int, batch: int = 256) -> None:
        super().__init__("flooder")
        self.addr = (host, port)
        self.block = all_topics_metadata_frame() * batch
        self.batch = batch
        self.received = 0

    def abuse(self) -> None:
        with socket.create_connection(self.addr) as s:
            s.settimeout(0.5)

            def reader() -> None:
                try:
                    while not self.stop_event.is_set():
                        try:
                            data = s.recv(1 << 20)
                        except TimeoutError:
                            continue
                        if not data:
                            return
                        self.received += len(data)
                except OSError:
                    return

            t = threading.Thread(target=reader, daemon=True)
            t.start()
            while not self.stop_event.is_set():
                try:
                    s.sendall(self.block)
                    self.sent += self.batch
                except TimeoutError:
                    continue
            t.join(5)


class Slowloris(Abuser):
    """`count` connections that each send one byte of a request frame per `every` seconds."""

    def __init__(self, host: str, port: int, count: int, every: float = 1.0) -> None:
        super().__init__("slowloris")
        self.addr, self.count, self.every = (host, port), count, every
        self.frame = all_topics_metadata_frame()
        self.closed = 0

    def abuse(self) -> None:
        socks = [socket.create_connection(self.addr) for _ in range(self.count)]
        pos = [0] * len(socks)
        alive = list(range(len(socks)))
        try:
            while alive and not self.stop_event.is_set():
                for i in list(alive):
                    try:
                        socks[i].sendall(self.frame[pos[i] % len(self.frame)].to_bytes(1, "big"))
                        pos[i] += 1
                    except OSError:
                        alive.remove(i)
                        self.closed += 1
                self.stop_event.wait(self.every)
        finally:
            for s in socks:
                s.close()


def held_open(sock: socket.socket, wait: float = 0.5) -> bool:
    """False when the server closed `sock` (EOF or reset) within `wait` seconds."""
    sock.settimeout(wait)
    try:
        return sock.recv(1) != b""
    except TimeoutError:
        return True
    except OSError:
        return False


class ConnectionFlood(Abuser):
    """Opens connections from `source` (a loopback address) as fast as it can and holds them."""

    def __init__(self, host: str, port: int, count: int, source: str = "127.0.0.2") -> None:
        super().__init__("connection-flood")
        self.addr, self.count, self.source = (host, port), count, source
        self.socks: list[socket.socket] = []
        self.opened = threading.Event()  # every connection attempt has been made

    def abuse(self) -> None:
        for _ in range(self.count):
            if self.stop_event.is_set():
                break
            try:
                self.socks.append(
                    socket.create_connection(self.addr, timeout=5, source_address=(self.source, 0))
                )
            except OSError:
                continue
        self.opened.set()
        self.stop_event.wait()
        for s in self.socks:
            s.close()

    def still_open(self) -> int:
        return sum(held_open(s, 0.01) for s in self.socks)
