"""Raw Kafka-protocol load generator for the coordinator benchmarks (asyncio + uvloop).

Not a test: it drives a running server (groupcoord, the bare echo server, or Tansu) and prints one JSON
object with what it measured. `bench/coordinator.py` starts the servers, pins them and this generator to
different cores, and turns the JSON into the results table.

Scenarios (sub-commands):

- ``join``: N members of one fresh group, one connection each. Phase 1 gets every member its id (KIP-394
  MEMBER_ID_REQUIRED round trip); phase 2 writes all N pre-encoded JoinGroup frames back to back and times
  until every member holds a SyncGroup answer of one generation that has all N members (members of an
  early, partial generation heartbeat until told to rejoin, as a real client does).
- ``heartbeat``: C connections, each one member of one of ``--groups`` groups (joined first, unless
  ``--no-join`` for the echo server), pipelined closed loop with ``--depth`` requests in flight per
  connection over one pre-encoded Heartbeat frame; throughput and p50/p99 latency after a warm-up, bounded
  by ``--duration`` and ``--max-requests``.
- ``hold``: G groups x M members joined over C connections (M connections per group at a time), then every
  member (session timeout ``--session-timeout-ms``, longer than the setup) heartbeats once per
  ``--interval`` seconds, spread evenly over 10 ms ticks; the server's CPU share and RSS are sampled over
  ``--duration`` seconds.

Frames are encoded once with `groupcoord.protocol.codec.encode_request`; at run time only the generation is patched
into SyncGroup and Heartbeat frames (correlation ids stay fixed per frame). Responses of one connection come
back in request order (Kafka mutes a channel while a request is in flight), so they are matched in order
and only the fixed-offset fields (error code, generation) are read, except where a whole decode is needed
(member ids, a partial generation's member list).

Server CPU comes from /proc/<pid>/stat (utime+stime, all threads) deltas, RSS from /proc/<pid>/status.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections import deque
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from measure import CpuWindow, Histogram  # bench/measure.py (script dir)

from groupcoord.protocol.codec import decode_response, encode_request
from groupcoord.protocol.messages.heartbeat import HeartbeatRequest
from groupcoord.protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from groupcoord.protocol.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment

JOIN, SYNC, HEARTBEAT = 11, 14, 12
# Non-flexible versions every target speaks; all three responses start corr(4) throttle(4) error(2).
JOIN_V, SYNC_V, HB_V = 5, 3, 3
MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID = 79, 27, 25
SESSION_TIMEOUT_MS, REBALANCE_TIMEOUT_MS = 45000, 60000
GEN_SENTINEL = 0x5A5AA5A5
_SENT = GEN_SENTINEL.to_bytes(4, "big")
METADATA = (
    b"\x00\x00\x00\x00\x00\x01\x00\x05bench\xff\xff\xff\xff"  # ConsumerProtocolSubscription v0, 1 topic
)
ASSIGNMENT = b"\x00\x00\x00\x00\x00\x01\x00\x05bench\x00\x00\x00\x01\x00\x00\x00\x00\xff\xff\xff\xff"
SERVER_PID: int | None = None  # set from --pid


class BenchError(Exception):
    pass


# ------------------------------------------------------------------------------------------- frames
def patch_gen(template: bytes, gen: int) -> bytes:
    i = template.find(_SENT)
    return template[:i] + (gen & 0xFFFFFFFF).to_bytes(4, "big") + template[i + 4 :]


def join_frame(group: str, member_id: str) -> bytes:
    body = JoinGroupRequest(
        group_id=group,
        session_timeout_ms=SESSION_TIMEOUT_MS,
        rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
        member_id=member_id,
        protocol_type="consumer",
        protocols=(JoinGroupRequestProtocol(name="range", metadata=METADATA),),
    )
    return encode_request(JOIN, JOIN_V, 1, body, client_id="loadgen")


def sync_template(group: str, member_id: str, members: list[str]) -> bytes:
    body = SyncGroupRequest(
        group_id=group,
        generation_id=GEN_SENTINEL,
        member_id=member_id,
        assignments=tuple(SyncGroupRequestAssignment(member_id=m, assignment=ASSIGNMENT) for m in members),
    )
    return encode_request(SYNC, SYNC_V, 2, body, client_id="loadgen")


def heartbeat_template(group: str, member_id: str) -> bytes:
    body = HeartbeatRequest(group_id=group, generation_id=GEN_SENTINEL, member_id=member_id)
    return encode_request(HEARTBEAT, HB_V, 3, body, client_id="loadgen")


def commit_template(group: str, partition: int, count: int = 1) -> bytes:
    """OffsetCommit v8 of `count` partitions (from `partition`) of topic "bench" for a simple group (no
    members: generation -1, member id "")."""
    from groupcoord.protocol.messages import offset_commit as oc

    topic = oc.OffsetCommitRequestTopic(
        name="bench",
        partitions=tuple(
            oc.OffsetCommitRequestPartition(partition_index=p, committed_offset=42, committed_metadata="")
            for p in range(partition, partition + count)
        ),
    )
    body = oc.OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=(topic,)
    )
    return encode_request(8, 8, 3, body, client_id="loadgen")


def fetch_template(group: str, count: int) -> bytes:
    """OffsetFetch v8 of partitions 0..count-1 of topic "bench" for one group (RequireStable false)."""
    from groupcoord.protocol.messages import offset_fetch as of

    g = of.OffsetFetchRequestGroup(
        group_id=group,
        topics=(of.OffsetFetchRequestTopics(name="bench", partition_indexes=tuple(range(count))),),
    )
    return encode_request(
        9, 8, 3, of.OffsetFetchRequest(groups=(g,), require_stable=False), client_id="loadgen"
    )


def error_codes(body: object, out: dict[int, int]) -> None:
    """Every `error_code` field of a decoded response, recursively, counted into `out` (0 included)."""
    if isinstance(body, tuple):
        for x in body:
            error_codes(x, out)
        return
    fields = getattr(body, "__dataclass_fields__", None)
    if not fields:
        return
    for name in fields:
        v = getattr(body, name)
        if name == "error_code" and isinstance(v, int):
            out[v] = out.get(v, 0) + 1
        elif isinstance(v, tuple):
            error_codes(v, out)


class ReplyErrors:
    """Per-partition error codes of pipelined replies: each distinct reply body (past the correlation id) is
    decoded once and its error codes counted; a repeat costs one dict lookup."""

    def __init__(self, api: int, version: int) -> None:
        self.api, self.version = api, version
        self.seen: dict[bytes, tuple[tuple[int, int], ...]] = {}

    def count(self, raw: bytes, errors: dict[int, int]) -> None:
        key = raw[4:]
        codes = self.seen.get(key)
        if codes is None:
            found: dict[int, int] = {}
            error_codes(decode_response(raw, self.api, self.version)[1], found)
            codes = self.seen[key] = tuple(found.items())
        for code, n in codes:
            errors[code] = errors.get(code, 0) + n


def i16(b: bytes, p: int) -> int:
    return int.from_bytes(b[p : p + 2], "big", signed=True)


def i32(b: bytes, p: int) -> int:
    return int.from_bytes(b[p : p + 4], "big", signed=True)


def parse_join(raw: bytes) -> tuple[int, int, bytes, bytes, int]:
    """(error, generation, leader, member_id, member count) of a JoinGroup v2-v5 response, no decode."""
    err = i16(raw, 8)
    if err:
        return err, -1, b"", b"", 0
    gen = i32(raw, 10)
    p = 14
    p += 2 + max(i16(raw, p), 0)  # protocol name
    ln = i16(raw, p)
    leader = raw[p + 2 : p + 2 + ln]
    p += 2 + ln
    ln = i16(raw, p)
    me = raw[p + 2 : p + 2 + ln]
    p += 2 + ln
    return err, gen, leader, me, i32(raw, p)


# --------------------------------------------------------------------------------------- connection
class Conn(asyncio.Protocol):
    """One client connection. Replies are matched to requests in order.

    Two modes: RPC (``call`` returns a future of the raw response frame, ``fire`` sends a heartbeat whose
    reply only feeds a histogram and an error count), and a pipelined closed loop (``start_pipeline``)
    that keeps ``depth`` copies of one frame in flight and re-sends as replies arrive.
    """

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.pending: deque = deque()
        self.lost = asyncio.get_running_loop().create_future()
        # pipeline state
        self.pipe_frame = b""
        self.pipe_on = False
        self.hist: Histogram | None = None
        self.done = 0
        self.errors: dict[int, int] = {}
        self.err_at = 12  # where a pipelined reply's error code starts (13 for a flexible header, KIP-848)
        self.reply_errors: ReplyErrors | None = None  # set: every error code of each reply is counted

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        for item in self.pending:
            if isinstance(item, asyncio.Future) and not item.done():
                item.set_exception(BenchError(f"connection lost: {exc!r}"))
        self.pending.clear()
        if not self.lost.done():
            self.lost.set_result(None)

    def call(self, frame: bytes) -> asyncio.Future:
        fut = asyncio.get_running_loop().create_future()
        self.pending.append(fut)
        self.transport.write(frame)  # type: ignore[union-attr]
        return fut

    def fire(self, frame: bytes) -> None:
        self.pending.append(time.perf_counter_ns())
        self.transport.write(frame)  # type: ignore[union-attr]

    def start_pipeline(self, frame: bytes, depth: int, hist: Histogram) -> None:
        self.pipe_frame, self.pipe_on, self.hist = frame, True, hist
        now = time.perf_counter_ns()
        self.pending.extend([now] * depth)
        self.transport.write(frame * depth)  # type: ignore[union-attr]

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        pos, n = 0, len(buf)
        replies = 0
        now = 0
        pending, hist, errors = self.pending, self.hist, self.errors
        while n - pos >= 4:
            end = pos + 4 + int.from_bytes(buf[pos : pos + 4], "big")
            if end > n:
                break
            item = pending.popleft()
            if isinstance(item, int):  # a timed heartbeat
                if not now:
                    now = time.perf_counter_ns()
                if hist is not None:
                    hist.add(now - item)
                if self.reply_errors is not None:
                    self.reply_errors.count(bytes(buf[pos + 4 : end]), errors)
                else:
                    err = int.from_bytes(buf[pos + self.err_at : pos + self.err_at + 2], "big")
                    if err:
                        errors[err] = errors.get(err, 0) + 1
                replies += 1
            elif not item.done():
                item.set_result(bytes(buf[pos + 4 : end]))
            pos = end
        if pos:
            del buf[:pos]
        if replies:
            self.done += replies
            if self.pipe_on:
                pending.extend([now] * replies)
                self.transport.write(self.pipe_frame * replies)  # type: ignore[union-attr]


async def connect(host: str, port: int, n: int) -> list[Conn]:
    loop = asyncio.get_running_loop()
    conns: list[Conn] = []
    for i in range(0, n, 200):  # bounded burst so the listen backlog never overflows
        pairs = await asyncio.gather(
            *(loop.create_connection(Conn, host, port) for _ in range(min(200, n - i)))
        )
        conns.extend(p for _, p in pairs)
    return conns


def close_all(conns: list[Conn]) -> None:
    for c in conns:
        if c.transport is not None:
            c.transport.close()


# ---------------------------------------------------------------------------------------- group join
class Group:
    """Join state of one group driven by this generator (one member per connection)."""

    def __init__(self, name: str, size: int) -> None:
        self.name = name
        self.size = size
        self.ids: list[str] = [""] * size
        self.gen_size: dict[int, int] = {}  # generation -> member count the leader saw
        self.final: dict[int, int] = {}  # member index -> generation it finished in
        self.full_sync: dict[str, bytes] = {}  # leader id -> pre-encoded sync with all members
        self.sync_tpl: list[bytes] = []
        self.join_frames: list[bytes] = []
        self.stats = {"rejoins": 0, "partial_generations": 0, "unknown_member": 0}
        self.t_join_first = self.t_join_last = self.t_leader_sync = 0.0

    def prepare(self) -> None:
        """Pre-encode every frame once all ids are known."""
        self.join_frames = [join_frame(self.name, m) for m in self.ids]
        self.sync_tpl = [sync_template(self.name, m, []) for m in self.ids]

    def leader_sync(self, leader: str) -> bytes:
        tpl = self.full_sync.get(leader)
        if tpl is None:
            tpl = self.full_sync[leader] = sync_template(self.name, leader, self.ids)
        return tpl


async def get_member_id(conn: Conn, group: Group, idx: int) -> None:
    raw = await conn.call(join_frame(group.name, ""))
    _, body = decode_response(raw, JOIN, JOIN_V)
    if body.error_code != MEMBER_ID_REQUIRED:
        raise BenchError(f"{group.name}: expected MEMBER_ID_REQUIRED, got error {body.error_code}")
    group.ids[idx] = body.member_id


async def run_member(conn: Conn, group: Group, idx: int, first: asyncio.Future | None = None) -> int:
    """Join (with the member's known id) and sync until in a generation holding the whole group."""
    fut = first
    while True:
        if fut is None:
            fut = conn.call(group.join_frames[idx])
        raw = await fut
        fut = None
        err, gen, leader, me, count = parse_join(raw)
        now = time.perf_counter()
        group.t_join_first = group.t_join_first or now
        group.t_join_last = now
        if err == UNKNOWN_MEMBER_ID:  # our id expired: start again as a new member
            group.stats["unknown_member"] += 1
            await get_member_id(conn, group, idx)
            group.join_frames[idx] = join_frame(group.name, group.ids[idx])
            group.sync_tpl[idx] = sync_template(group.name, group.ids[idx], [])
            group.full_sync.clear()
            continue
        if err:
            raise BenchError(f"{group.name}: JoinGroup error {err}")
        if leader == me:
            group.gen_size[gen] = count
            if count == group.size:
                frame = patch_gen(group.leader_sync(me.decode()), gen)
            else:  # a partial generation: assign to exactly the members the coordinator named
                group.stats["partial_generations"] += 1
                _, body = decode_response(raw, JOIN, JOIN_V)
                frame = patch_gen(
                    sync_template(group.name, me.decode(), [m.member_id for m in body.members]), gen
                )
            group.t_leader_sync = time.perf_counter()
        else:
            frame = patch_gen(group.sync_tpl[idx], gen)
        raw = await conn.call(frame)
        err = i16(raw, 8)
        if err == REBALANCE_IN_PROGRESS:
            group.stats["rejoins"] += 1
            continue
        if err:
            raise BenchError(f"{group.name}: SyncGroup error {err}")
        if group.gen_size.get(gen) == group.size:
            group.final[idx] = gen
            return gen
        # synced into a partial generation: heartbeat until the coordinator calls a rebalance
        hb = patch_gen(heartbeat_template(group.name, group.ids[idx]), gen)
        while True:
            await asyncio.sleep(0.005)
            if group.gen_size.get(gen) == group.size:
                group.final[idx] = gen
                return gen
            raw = await conn.call(hb)
            err = i16(raw, 8)
            if err == REBALANCE_IN_PROGRESS:
                group.stats["rejoins"] += 1
                break
            if err:
                raise BenchError(f"{group.name}: Heartbeat error {err}")


async def join_group(conns: list[Conn], group: Group, time_server: bool = False) -> dict:
    """Both phases for one group; returns the timings of phase 2."""
    await asyncio.gather(*(get_member_id(c, group, i) for i, c in enumerate(conns)))
    group.prepare()
    group.leader_sync(group.ids[0])  # pre-encode the likely leader's full sync (the first joiner leads)
    cpu = CpuWindow(SERVER_PID) if time_server else None
    t_first = time.perf_counter()
    futs = [c.call(group.join_frames[i]) for i, c in enumerate(conns)]
    t_last = time.perf_counter()
    tasks = [asyncio.ensure_future(run_member(c, group, i, futs[i])) for i, c in enumerate(conns)]
    await asyncio.gather(*tasks)
    t_done = time.perf_counter()
    gens = set(group.final.values())
    server = {"server_cpu_ms": cpu.result()["cpu_s"] * 1000} if cpu is not None and SERVER_PID else {}
    return {
        **server,
        "members": group.size,
        "after_last_join_ms": (t_done - t_last) * 1000,
        "after_first_join_ms": (t_done - t_first) * 1000,
        "join_write_ms": (t_last - t_first) * 1000,
        "first_join_reply_ms": (group.t_join_first - t_last) * 1000,
        "last_join_reply_ms": (group.t_join_last - t_last) * 1000,
        "leader_sync_sent_ms": (group.t_leader_sync - t_last) * 1000,
        "generation": max(gens),
        "generations_seen": len(group.gen_size),
        **group.stats,
    }


# ------------------------------------------------------------------------------------------ scenarios
async def scenario_join(args: argparse.Namespace) -> dict:
    runs = []
    for rep in range(args.reps):
        conns = await connect(args.host, args.port, args.members)
        try:
            group = Group(f"bench-join-{args.members}-{rep}-{os.getpid()}", args.members)
            cpu = CpuWindow(args.pid)
            r = await asyncio.wait_for(join_group(conns, group, time_server=True), args.timeout)
            r.update(cpu.result())
            runs.append(r)
        finally:
            close_all(conns)
        await asyncio.sleep(0.2)
    figs = sorted(r["after_last_join_ms"] for r in runs)
    return {"scenario": "join", "members": args.members, "runs": runs, "median_ms": figs[len(figs) // 2]}


async def consumer_group_member(c: Conn, group: str) -> bytes:
    """Join `group` (KIP-848) on `c` subscribing to a topic that does not exist (so there is nothing to
    reconcile), check a steady-state heartbeat is answered, and return that heartbeat's frame: the member id
    and epoch, every "unchanged" field null, as Java and librdkafka send between changes."""
    from groupcoord.protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest as Cgh

    member = f"{group}-m"
    join = Cgh(group_id=group, member_id=member, member_epoch=0, rebalance_timeout_ms=60000,
               subscribed_topic_names=("bench-cg-none",), topic_partitions=())  # fmt: skip
    r = decode_response(await c.call(encode_request(68, 1, 1, join, client_id="loadgen")), 68, 1)[1]
    if r.error_code:
        raise BenchError(f"ConsumerGroupHeartbeat join: error {r.error_code}")
    frame = encode_request(68, 1, 3, Cgh(group_id=group, member_id=member, member_epoch=r.member_epoch),
                           client_id="loadgen")  # fmt: skip
    steady = decode_response(await c.call(frame), 68, 1)[1]
    if steady.error_code or steady.member_epoch != r.member_epoch:
        raise BenchError(f"ConsumerGroupHeartbeat steady state: {steady}")
    c.err_at = 13  # size, correlation id, header tags, throttle time: the error code
    return frame


async def scenario_heartbeat(args: argparse.Namespace) -> dict:
    conns = await connect(args.host, args.port, args.connections)
    try:
        if args.commit or args.fetch:  # OffsetCommit / OffsetFetch of simple groups; every error code counted
            parts = args.partitions
            names = [f"bench-commit-{os.getpid()}-{i % args.groups}" for i in range(len(conns))]
            frames = [commit_template(g, 0 if parts > 1 else i, parts) for i, g in enumerate(names)]
            if args.fetch:  # commit once, then fetch those offsets
                for c, f in zip(conns, frames, strict=True):
                    await c.call(f)
                frames = [fetch_template(g, parts) for g in names]
            shared = ReplyErrors(9, 8) if args.fetch else ReplyErrors(8, 8)
            for c in conns:
                c.reply_errors = shared
            join = None
        elif args.consumer_group:  # KIP-848 steady-state heartbeats, one member per group
            frames = [
                await consumer_group_member(c, f"bench-cg-{os.getpid()}-{i}") for i, c in enumerate(conns)
            ]
            join = None
        elif args.no_join:
            frames = [patch_gen(heartbeat_template("bench-hb", f"m-{i}"), 1) for i in range(len(conns))]
            join = None
        else:
            names = args.group_names.split(",") if args.group_names else None
            k = max(1, min(len(names) if names else args.groups, len(conns)))
            chunks = [conns[j::k] for j in range(k)]
            groups = [
                Group(names[j] if names else f"bench-hb-{j}-{os.getpid()}", len(chunk))
                for j, chunk in enumerate(chunks)
            ]
            joins = await asyncio.wait_for(
                asyncio.gather(*(join_group(c, g) for c, g in zip(chunks, groups, strict=True))), args.timeout
            )
            join = {"groups": k, "max_after_last_join_ms": max(j["after_last_join_ms"] for j in joins)}
            frame_of = {}
            for chunk, g in zip(chunks, groups, strict=True):
                for i, c in enumerate(chunk):
                    frame_of[id(c)] = patch_gen(heartbeat_template(g.name, g.ids[i]), g.final[i])
            frames = [frame_of[id(c)] for c in conns]
        hist = Histogram()
        for c, f in zip(conns, frames, strict=True):
            c.start_pipeline(f, args.depth, hist)
        await asyncio.sleep(args.warmup)
        base = sum(c.done for c in conns)
        hist.__init__()
        for c in conns:
            c.errors.clear()
        cpu = CpuWindow(args.pid)
        deadline = time.perf_counter() + args.duration
        while time.perf_counter() < deadline:
            await asyncio.sleep(0.05)
            if args.max_requests and sum(c.done for c in conns) - base >= args.max_requests:
                break
        done = sum(c.done for c in conns) - base
        window = cpu.result()
        for c in conns:
            c.pipe_on = False
        errors: dict[int, int] = {}
        for c in conns:
            for k, v in c.errors.items():
                errors[k] = errors.get(k, 0) + v
        return {
            "scenario": "heartbeat",
            "connections": len(conns),
            "depth": args.depth,
            "requests": done,
            "per_s": done / window["wall_s"],
            "errors": errors,
            "join": join,
            **hist.summary(),
            **window,
        }
    finally:
        close_all(conns)


async def scenario_hold(args: argparse.Namespace) -> dict:
    n_groups, size, n_conns = args.groups, args.members, args.connections
    lanes = n_conns // size
    conns = await connect(args.host, args.port, lanes * size)
    tick_s = 0.01
    n_slots = max(1, round(args.interval / tick_s))
    slots: list[list[tuple[Conn, bytes]]] = [[] for _ in range(n_slots)]
    hist = Histogram()
    for c in conns:
        c.hist = hist
    registered = 0
    stop = False

    async def ticker() -> None:
        i = 0
        t_next = time.perf_counter()
        while not stop:
            for c, f in slots[i % n_slots]:
                c.fire(f)
            i += 1
            t_next += tick_s
            await asyncio.sleep(max(0.0, t_next - time.perf_counter()))

    async def lane(k: int) -> None:
        nonlocal registered
        mine = conns[k * size : (k + 1) * size]
        for g in range(k, n_groups, lanes):
            group = Group(f"hold-{g:05d}-{os.getpid()}", size)
            await join_group(mine, group)
            for i, c in enumerate(mine):
                f = patch_gen(heartbeat_template(group.name, group.ids[i]), group.final[i])
                slots[(registered * 7919) % n_slots].append((c, f))  # spread members over the ticks
                registered += 1

    tick_task = asyncio.ensure_future(ticker()) if args.hb_during_setup else None
    try:
        t0 = time.perf_counter()
        setup_cpu = CpuWindow(args.pid)
        await asyncio.wait_for(asyncio.gather(*(lane(k) for k in range(lanes))), args.timeout)
        setup = setup_cpu.result()
        setup["setup_s"] = time.perf_counter() - t0
        print(f"hold: {registered} members joined in {setup['setup_s']:.1f} s", file=sys.stderr, flush=True)
        if tick_task is None:
            tick_task = asyncio.ensure_future(ticker())
        await asyncio.sleep(args.warmup)
        base = sum(c.done for c in conns)
        hist.__init__()
        for c in conns:
            c.errors.clear()
        cpu = CpuWindow(args.pid)
        await asyncio.sleep(args.duration)
        window = cpu.result()
        done = sum(c.done for c in conns) - base
        errors: dict[int, int] = {}
        for c in conns:
            for k, v in c.errors.items():
                errors[k] = errors.get(k, 0) + v
        return {
            "scenario": "hold",
            "groups": n_groups,
            "members_per_group": size,
            "members": registered,
            "connections": len(conns),
            "interval_s": args.interval,
            "heartbeats": done,
            "per_s": done / window["wall_s"],
            "errors": errors,
            "setup": setup,
            **hist.summary(),
            **window,
        }
    finally:
        stop = True
        if tick_task is not None:
            tick_task.cancel()
        close_all(conns)


async def _txn_call(c: Conn, api: int, version: int, body: object) -> object:
    return decode_response(
        await c.call(encode_request(api, version, 7, body, client_id="loadgen")), api, version
    )[1]


async def scenario_txn(args: argparse.Namespace) -> dict:
    """C connections, each one transactional producer looping AddOffsetsToTxn, TxnOffsetCommit (of
    ``--partitions`` partitions of topic "bench" for its own group), EndTxn(commit). CONCURRENT_TRANSACTIONS
    (51: the previous transaction still completing) is retried after 1 ms and counted as a retry; every other
    error code of every response is counted."""
    from groupcoord.protocol.messages import add_offsets_to_txn as ao
    from groupcoord.protocol.messages import end_txn as et
    from groupcoord.protocol.messages import init_producer_id as ip
    from groupcoord.protocol.messages import txn_offset_commit as tc

    conns = await connect(args.host, args.port, args.connections)
    errors: dict[int, int] = {}
    retries = 0
    done = 0
    measuring = False
    stop = False

    async def producer(i: int, c: Conn) -> None:
        nonlocal retries, done
        tid, group = f"bench-txn-{os.getpid()}-{i}", f"bench-txn-g-{os.getpid()}-{i}"
        r = await _txn_call(
            c, 22, 4, ip.InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60000)
        )
        if r.error_code:
            raise BenchError(f"InitProducerId: error {r.error_code}")
        pid, epoch = r.producer_id, r.producer_epoch
        topic = tc.TxnOffsetCommitRequestTopic(name="bench", partitions=tuple(
            tc.TxnOffsetCommitRequestPartition(partition_index=p, committed_offset=7, committed_metadata="")
            for p in range(args.partitions)))  # fmt: skip
        frames = (
            encode_request(25, 3, 7, ao.AddOffsetsToTxnRequest(tid, pid, epoch, group), client_id="loadgen"),
            encode_request(
                28,
                3,
                7,
                tc.TxnOffsetCommitRequest(tid, group, pid, epoch, topics=(topic,)),
                client_id="loadgen",
            ),
            encode_request(26, 3, 7, et.EndTxnRequest(tid, pid, epoch, True), client_id="loadgen"),
        )
        keys = ((25, 3), (28, 3), (26, 3))
        while not stop:
            for frame, (api, v) in zip(frames, keys, strict=True):
                while True:
                    found: dict[int, int] = {}
                    error_codes(decode_response(await c.call(frame), api, v)[1], found)
                    if found.get(51) and api == 25:
                        retries += measuring
                        await asyncio.sleep(0.001)
                        continue
                    break
                if measuring:
                    for code, n in found.items():
                        errors[code] = errors.get(code, 0) + n
            done += measuring

    tasks = [asyncio.ensure_future(producer(i, c)) for i, c in enumerate(conns)]
    try:
        await asyncio.sleep(args.warmup)
        for t in tasks:
            if t.done():
                t.result()
        measuring = True
        cpu = CpuWindow(args.pid)
        await asyncio.sleep(args.duration)
        window = cpu.result()
        measuring = False
        n = done
        stop = True
        await asyncio.wait_for(asyncio.gather(*tasks), 30)
        return {"scenario": "txn", "connections": len(conns), "requests": n, "per_s": n / window["wall_s"],
                "errors": errors, "retries": retries, **window}  # fmt: skip
    finally:
        stop = True
        close_all(conns)


def main() -> None:
    global SESSION_TIMEOUT_MS, REBALANCE_TIMEOUT_MS, SERVER_PID
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="scenario", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--host", default="127.0.0.1")
    common.add_argument("--port", type=int, required=True)
    common.add_argument("--pid", type=int, default=None, help="server pid: sample its CPU and RSS")
    common.add_argument("--timeout", type=float, default=300.0, help="hard bound on the join phases (s)")
    common.add_argument("--session-timeout-ms", type=int, default=SESSION_TIMEOUT_MS)
    common.add_argument("--rebalance-timeout-ms", type=int, default=REBALANCE_TIMEOUT_MS)
    p = sub.add_parser("join", parents=[common])
    p.add_argument("--members", type=int, default=1000)
    p.add_argument("--reps", type=int, default=3)
    p = sub.add_parser("heartbeat", parents=[common])
    p.add_argument("--connections", type=int, default=64)
    p.add_argument("--depth", type=int, default=16, help="requests in flight per connection")
    p.add_argument("--duration", type=float, default=10.0)
    p.add_argument("--warmup", type=float, default=1.0)
    p.add_argument("--max-requests", type=int, default=0, help="stop early after this many (0: no bound)")
    p.add_argument("--no-join", action="store_true", help="skip the group join (echo server)")
    p.add_argument("--commit", action="store_true", help="pipeline OffsetCommit v8 of simple groups instead")
    p.add_argument(
        "--consumer-group", action="store_true", help="pipeline steady-state ConsumerGroupHeartbeats instead"
    )
    p.add_argument("--fetch", action="store_true", help="pipeline OffsetFetch v8 of simple groups instead")
    p.add_argument("--partitions", type=int, default=1, help="partitions per OffsetCommit / OffsetFetch")
    p.add_argument("--groups", type=int, default=8, help="the connections' members form this many groups")
    p.add_argument(
        "--group-names",
        default="",
        help="comma-separated names of those groups (cluster benches pick owned ones)",
    )
    p = sub.add_parser("txn", parents=[common])
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--partitions", type=int, default=10)
    p.add_argument("--duration", type=float, default=5.0)
    p.add_argument("--warmup", type=float, default=1.0)
    p = sub.add_parser("hold", parents=[common])
    p.add_argument("--groups", type=int, default=10000)
    p.add_argument("--members", type=int, default=10)
    p.add_argument("--connections", type=int, default=1000)
    p.add_argument("--interval", type=float, default=3.0, help="heartbeat interval per member (s)")
    p.add_argument("--duration", type=float, default=30.0)
    p.add_argument("--warmup", type=float, default=3.0)
    p.add_argument(
        "--hb-during-setup",
        action="store_true",
        help="heartbeat each group as soon as it is joined (default: start once all are joined; then pass a "
        "session timeout longer than the setup)",
    )
    args = parser.parse_args()
    SESSION_TIMEOUT_MS, REBALANCE_TIMEOUT_MS = args.session_timeout_ms, args.rebalance_timeout_ms
    SERVER_PID = args.pid
    import uvloop

    fn = {"join": scenario_join, "heartbeat": scenario_heartbeat, "hold": scenario_hold, "txn": scenario_txn}[
        args.scenario
    ]
    result = uvloop.run(fn(args))
    result["generator_pid"] = os.getpid()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
