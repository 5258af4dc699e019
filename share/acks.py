"""Share records and their acknowledgements: the record a share consumer delivers, the acknowledgement
types of KIP-932, and the encoding of pending acknowledgements into ``AcknowledgementBatches``."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from enum import IntEnum

from groupcoord.protocol.messages.share_fetch import AcknowledgementBatch


class AcknowledgeType(IntEnum):
    """Kafka's AcknowledgeType ids (ShareFetch/ShareAcknowledge ``AcknowledgeTypes``). GAP is what a client
    sends for an acquired offset that holds no record; applications use ACCEPT, RELEASE and REJECT."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3


@dataclass(frozen=True, slots=True)
class ShareRecord:
    """One delivered record. ``delivery_count`` is 1 on first delivery and grows with each redelivery (a
    release, an expired acquisition lock, a consumer that went away holding it)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    delivery_count: int
    topic_id: uuid.UUID

    @property
    def ident(self) -> tuple[uuid.UUID, int, int]:
        return (self.topic_id, self.partition, self.offset)


def encode_batches(acks: dict[int, int]) -> tuple[AcknowledgementBatch, ...]:
    """Offsets -> types as Kafka encodes them: one batch per run of consecutive offsets, its types list
    collapsed to a single entry when the whole run has one type (as Java's Acknowledgements does)."""
    out: list[AcknowledgementBatch] = []
    run: list[tuple[int, int]] = []

    def flush() -> None:
        if run:
            types = [t for _, t in run]
            out.append(
                AcknowledgementBatch(
                    first_offset=run[0][0],
                    last_offset=run[-1][0],
                    acknowledge_types=(types[0],) if len(set(types)) == 1 else tuple(types),
                )
            )
            run.clear()

    for offset in sorted(acks):
        if run and offset != run[-1][0] + 1:
            flush()
        run.append((offset, acks[offset]))
    flush()
    return tuple(out)
