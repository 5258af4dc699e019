"""Codec micro-benchmark: µs per decode and per encode of the coordinator's hot messages.

Run with `make bench` (or `python bench/codec.py`). Not a test: the figures go in the README. Decodes are
whole request frames (header + body, as the server does them); encodes are whole response frames.
"""

from __future__ import annotations

import platform
import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from groupcoord.protocol.codec import decode_request, decode_response, encode_request, encode_response
from groupcoord.protocol.messages.heartbeat import HeartbeatRequest
from groupcoord.protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from groupcoord.protocol.messages.sync_group import SyncGroupResponse

MEMBER = "consumer-1-" + "3f2b8c1e-9d4a-4e0b-8c55-1a2b3c4d5e6f"


def per_call_us(fn, budget: float = 0.5) -> float:  # type: ignore[no-untyped-def]
    n = 1000
    while True:
        t = timeit.timeit(fn, number=n)
        if t > budget:
            break
        n *= 2
    return min(timeit.repeat(fn, number=n, repeat=3)) / n * 1e6


def main() -> None:
    protocols = (
        JoinGroupRequestProtocol(name="range", metadata=b"\x00\x03" + b"r" * 58),
        JoinGroupRequestProtocol(name="roundrobin", metadata=b"\x00\x03" + b"o" * 58),
    )
    join = JoinGroupRequest(
        group_id="orders-service", session_timeout_ms=45000, rebalance_timeout_ms=300000, member_id=MEMBER,
        group_instance_id="instance-7", protocol_type="consumer", protocols=protocols,
    )  # fmt: skip
    rows = []
    hb = HeartbeatRequest(
        group_id="orders-service", generation_id=42, member_id=MEMBER, group_instance_id="instance-7"
    )
    frame = encode_request(12, 4, 1, hb)[4:]
    rows.append(("Heartbeat v4 request", per_call_us(lambda: decode_request(frame)),
                 per_call_us(lambda: encode_request(12, 4, 1, hb))))  # fmt: skip
    for v in (5, 9):
        body = join
        fr = encode_request(11, v, 1, body)[4:]
        rows.append((f"JoinGroup v{v} request (2 × 60-byte protocols)", per_call_us(lambda fr=fr: decode_request(fr)),
                     per_call_us(lambda body=body, v=v: encode_request(11, v, 1, body))))  # fmt: skip
    sync = SyncGroupResponse(
        error_code=0, protocol_type="consumer", protocol_name="range", assignment=b"\x00" * 64
    )
    rframe = encode_response(1, 14, 5, sync)[4:]
    rows.append(("SyncGroup v5 response (64-byte assignment)", per_call_us(lambda: decode_response(rframe, 14, 5)),
                 per_call_us(lambda: encode_response(1, 14, 5, sync))))  # fmt: skip
    print(f"codec, Python {platform.python_version()} on {platform.machine()}, construct compiled")
    print(f"{'message':50} {'decode µs':>10} {'encode µs':>10}")
    for name, d, e in rows:
        print(f"{name:50} {d:10.2f} {e:10.2f}")


if __name__ == "__main__":
    main()
