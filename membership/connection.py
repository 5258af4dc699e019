"""One asyncio connection to a Kafka broker: framed requests out, responses matched by correlation id.

Several requests may be in flight at once (a JoinGroup can wait for a whole rebalance while the same
member's LeaveGroup or a Heartbeat goes out), so a reader task resolves one future per correlation id.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct

from groupcoord.protocol.codec import decode_response, encode_request

_SIZE = struct.Struct(">i")


class ConnectionClosedError(ConnectionError):
    """The broker closed the connection (or it failed) with requests still unanswered."""


class Connection:
    """A Kafka client connection (no TLS/SASL: groupcoord and plaintext brokers only)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client_id: str) -> None:
        self.reader, self.writer, self.client_id = reader, writer, client_id
        self.correlation = 0
        self.pending: dict[int, tuple[asyncio.Future[object], int, int]] = {}
        self.reader_task = asyncio.create_task(self.read_loop())

    @classmethod
    async def open(cls, host: str, port: int, client_id: str, timeout: float = 10.0) -> Connection:
        # asyncio.timeout, not wait_for: Python 3.11's wait_for returns a result that completed just as the
        # caller was cancelled and swallows the cancellation (the caller's stop() then waits forever)
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer, client_id)

    async def request(self, api_key: int, version: int, body: object, timeout: float | None = None) -> object:
        """Send ``body`` and wait for its response body (decoded at the same version)."""
        if self.reader_task.done():
            raise ConnectionClosedError("connection is closed")
        self.correlation += 1
        corr = self.correlation
        fut: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self.pending[corr] = (fut, api_key, version)
        self.writer.write(encode_request(api_key, version, corr, body, client_id=self.client_id))
        await self.writer.drain()
        try:
            async with asyncio.timeout(timeout):  # not wait_for: see open()
                return await asyncio.shield(fut)
        finally:
            self.pending.pop(corr, None)

    async def read_loop(self) -> None:
        error: BaseException = ConnectionClosedError("connection closed by the broker")
        try:
            while True:
                (size,) = _SIZE.unpack(await self.reader.readexactly(4))
                frame = await self.reader.readexactly(size)
                (corr,) = _SIZE.unpack_from(frame, 0)
                entry = self.pending.get(corr)
                if entry is None:
                    continue  # a response nobody waits for any more (timed out)
                fut, api_key, version = entry
                if not fut.done():
                    fut.set_result(decode_response(frame, api_key, version)[1])
        except (asyncio.IncompleteReadError, OSError) as exc:
            error = ConnectionClosedError(f"connection lost: {exc!r}")
        except Exception as exc:  # undecodable response: fail every waiter rather than hang them
            error = ConnectionClosedError(f"bad response: {exc!r}")
        finally:
            for fut, _, _ in self.pending.values():
                if not fut.done():
                    fut.set_exception(error)

    async def close(self) -> None:
        self.reader_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.reader_task
        self.writer.close()
        with contextlib.suppress(OSError):
            await self.writer.wait_closed()
