"""The one exception the log engine raises for requests it refuses.

It carries the Kafka error code to put in the response, so API handlers map it without guessing.
"""

from __future__ import annotations

from groupcoord.protocol.errors import ErrorCode


class LogError(Exception):
    """A request the engine refuses, with the Kafka `ErrorCode` a response should carry."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(f"{code.name}: {message}")
