"""Errors of :mod:`groupcoord.share`."""

from __future__ import annotations


class ShareConsumerError(Exception):
    """A fatal error: the consumer cannot go on (authorization, an unsupported broker, a bad group id)."""

    def __init__(self, message: str, error_code: int | None = None) -> None:
        super().__init__(message)
        self.error_code = error_code


class ShareStateError(RuntimeError):
    """The API used out of order, as Java's IllegalStateException: acknowledging in implicit mode, a record
    that is not in flight, or a closed consumer."""
