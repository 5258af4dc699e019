"""Bare asyncio+uvloop "echo" server: the ceiling for the coordinator benchmarks.

It frames requests exactly as the coordinator does (4-byte size prefix) and answers every frame with a fixed,
pre-encoded Heartbeat response (error NONE) for the request's version, with the request's correlation id
patched in. No decoding, no group logic: what is left is the cost of asyncio + uvloop + the framing loop.

    python bench/echo_server.py --host 127.0.0.1 --port 19092
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from groupcoord.protocol.codec import encode_response
from groupcoord.protocol.messages.heartbeat import HeartbeatResponse

HEARTBEAT = 12
# one pre-encoded OK Heartbeat response per version 0-4 (v4 is flexible: header v1)
_RESPONSES = [
    encode_response(0, HEARTBEAT, v, HeartbeatResponse(throttle_time_ms=0, error_code=0)) for v in range(5)
]


class Echo(asyncio.Protocol):
    __slots__ = ("_buf", "_transport")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        buf = self._buf
        buf += data
        out = []
        pos = 0
        n = len(buf)
        while n - pos >= 4:
            end = pos + 4 + int.from_bytes(buf[pos : pos + 4], "big")
            if end > n:
                break
            version = buf[pos + 7] if buf[pos + 7] < 5 else 4
            resp = _RESPONSES[version]
            out.append(resp[:4])
            out.append(buf[pos + 8 : pos + 12])  # correlation id of the request
            out.append(resp[8:])
            pos = end
        if pos:
            del buf[:pos]
            self._transport.write(b"".join(out))  # type: ignore[union-attr]


async def serve(host: str, port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Echo, host, port, backlog=4096)
    print(f"echo server listening on {host}:{port}", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=19092)
    args = parser.parse_args()
    import uvloop

    try:
        uvloop.run(serve(args.host, args.port))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
