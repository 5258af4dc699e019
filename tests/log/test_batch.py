from __future__ import annotations

import pytest
from log_helpers import decode, make_batch

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.log.batch import (
    HEADER_SIZE,
    check_batch,
    crc_ok,
    first_record_at_or_after,
    parse_header,
    set_base_offset,
    split_batches,
    validate_for_append,
)
from groupcoord.server.log.errors import LogError


def test_header_fields_match_the_builder() -> None:
    blob = make_batch(5, pid=42, epoch=3, seq=10, ts=5_000, ts_step=10)
    (h,) = split_batches(blob)
    assert (h.magic, h.base_offset, h.size) == (2, 0, len(blob))
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.last_sequence) == (42, 3, 10, 14)
    assert (h.records_count, h.last_offset_delta) == (5, 4)
    assert (h.base_timestamp, h.max_timestamp) == (5_000, 5_040)
    assert h.has_producer_id and not h.is_transactional and not h.is_control


def test_split_several_batches() -> None:
    a, b = make_batch(2), make_batch(4)
    hs = split_batches(a + b)
    assert [h.position for h in hs] == [0, len(a)]
    assert [h.records_count for h in hs] == [2, 4]


@pytest.mark.parametrize("magic", [0, 1])
def test_old_magic_is_unsupported(magic: int) -> None:
    blob = bytearray(make_batch())
    blob[16] = magic
    with pytest.raises(LogError) as e:
        split_batches(blob)
    assert e.value.code == ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT


def test_bad_crc_is_corrupt() -> None:
    blob = bytearray(make_batch())
    blob[-1] ^= 0xFF
    with pytest.raises(LogError) as e:
        split_batches(blob)
    assert e.value.code == ErrorCode.CORRUPT_MESSAGE


@pytest.mark.parametrize("cut", [5, 20, HEADER_SIZE - 1, HEADER_SIZE + 3, -1])
def test_truncated_is_corrupt(cut: int) -> None:
    blob = make_batch()
    with pytest.raises(LogError) as e:
        split_batches(blob[:cut])
    assert e.value.code == ErrorCode.CORRUPT_MESSAGE


def test_base_offset_rewrite_keeps_crc_valid() -> None:
    blob = bytearray(make_batch(3))
    set_base_offset(blob, 0, 1_000_000)
    h = check_batch(blob, 0)
    assert h.base_offset == 1_000_000 and crc_ok(blob, h)
    assert [o for o, _, _ in decode(bytes(blob))] == [1_000_000, 1_000_001, 1_000_002]


def test_transactional_batches_pass_and_control_batches_are_refused() -> None:
    (h,) = split_batches(make_batch(pid=1, epoch=0, seq=0, transactional=True))
    validate_for_append(h)  # membership in a transaction is the coordinator's check (server/txn)
    (h,) = split_batches(make_batch(transactional=True))
    with pytest.raises(LogError) as e:
        validate_for_append(h)
    assert e.value.code == ErrorCode.INVALID_RECORD
    blob = bytearray(make_batch())
    blob[22] |= 0x20  # control bit; the CRC check is skipped to reach the validator
    (h,) = split_batches(blob, verify_crc=False)
    with pytest.raises(LogError) as e:
        validate_for_append(h)
    assert e.value.code == ErrorCode.INVALID_RECORD


def test_producer_id_without_sequence_is_invalid() -> None:
    (h,) = split_batches(make_batch(pid=1, epoch=0, seq=-1))
    with pytest.raises(LogError) as e:
        validate_for_append(h)
    assert e.value.code == ErrorCode.INVALID_RECORD


def test_first_record_at_or_after() -> None:
    blob = make_batch(5, ts=100, ts_step=10)  # 100, 110, ..., 140
    h = parse_header(blob)
    assert first_record_at_or_after(blob, h, 0) == (0, 100)
    assert first_record_at_or_after(blob, h, 111) == (2, 120)
    assert first_record_at_or_after(blob, h, 140) == (4, 140)
    assert first_record_at_or_after(blob, h, 141) is None
