"""A sequence of records kept column by column (issue 39): what the hot paths pass instead of one object per
partition.

An OffsetCommit of 100 partitions decoded into dataclasses costs 100 request objects, then 100 of each kind on
the way to the store and back to the wire. `Columns` holds the same data as a few tuples (one per field, filled
by one `struct.unpack` where the frame allows) and still *is* a sequence of those objects for every reader
that is not a hot path: indexing or iterating it builds the objects once (`make(*row)` per row, cached), it
compares equal to the tuple of them, hashes like it, and reprs like it. The hot paths (protocol/fast.py, the
OffsetCommit handler and state machine) read `cols` and never build a row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar, overload

T = TypeVar("T")


class Columns(Sequence[T], Generic[T]):
    """`len(cols[0])` records, record i being `make(cols[0][i], cols[1][i], ...)`."""

    __slots__ = ("_rows", "cols", "make")

    def __init__(self, make: Callable[..., T], *cols: tuple[Any, ...]) -> None:
        self.make = make
        self.cols = cols
        self._rows: tuple[T, ...] | None = None

    def rows(self) -> tuple[T, ...]:
        """The records as objects (built on first use, then kept)."""
        if self._rows is None:
            self._rows = tuple(map(self.make, *self.cols))
        return self._rows

    def __len__(self) -> int:
        return len(self.cols[0])

    @overload
    def __getitem__(self, i: int) -> T: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[T, ...]: ...
    def __getitem__(self, i: int | slice) -> T | tuple[T, ...]:
        return self.rows()[i]

    def __iter__(self) -> Iterator[T]:
        return iter(self.rows())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Columns):
            return self.rows() == other.rows()
        if isinstance(other, tuple):
            return self.rows() == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.rows())

    def __repr__(self) -> str:
        return repr(self.rows())
