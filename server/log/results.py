"""What the log engine answers (`LogManager.append`, `read`, `list_offsets`): plain named tuples the handlers
and the cluster log share."""

from __future__ import annotations

from typing import NamedTuple

from groupcoord.protocol.errors import ErrorCode


class AppendResult(NamedTuple):
    error: ErrorCode
    base_offset: int  # -1 on error (and for an empty records blob)
    log_start_offset: int
    log_append_time_ms: int = -1  # CreateTime topics only: always -1
    error_message: str | None = None


class ReadResult(NamedTuple):
    error: ErrorCode
    records: bytes
    high_watermark: int
    last_stable_offset: int  # first offset of the oldest open transaction, else the high watermark
    log_start_offset: int
    #: read_committed only: (producer id, first offset) of aborted transactions in the range read
    aborted: tuple[tuple[int, int], ...] | None = None


class OffsetResult(NamedTuple):
    error: ErrorCode
    offset: int
    timestamp: int
