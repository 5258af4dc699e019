"""Hypothesis round trips for every message, every declared version: encode -> decode -> equal -> same bytes."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from codec_helpers import ALL_MESSAGES, all_cases, case_id, fuzz, is_flexible, message_strategy, versions_of
from hypothesis import given
from hypothesis import strategies as st

from groupcoord.protocol.errors import DecodeError, EncodeError

CASES = all_cases()
FLEXIBLE_CASES = [c for c in CASES if is_flexible(*c)]

FAST = fuzz(12)


def test_registry_is_complete() -> None:
    names = {cls.__name__ for cls in ALL_MESSAGES}
    for api in (
        "ApiVersions",
        "Metadata",
        "FindCoordinator",
        "CreateTopics",
        "DeleteTopics",
        "CreatePartitions",
        "DeleteRecords",
        "Produce",
        "Fetch",
        "ListOffsets",
        "InitProducerId",
        "OffsetForLeaderEpoch",
    ):
        assert {f"{api}Request", f"{api}Response"} <= names


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_defaults_round_trip(case: tuple[type, int]) -> None:
    cls, version = case
    obj = cls()
    data = obj.encode(version)
    assert cls.decode(data, version) == obj


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_round_trip(case: tuple[type, int]) -> None:
    cls, version = case

    @FAST
    @given(message_strategy(cls, version))
    def check(obj: Any) -> None:
        data = obj.encode(version)
        back = cls.decode(data, version)
        assert back == obj
        assert back.encode(version) == data

    check()


@pytest.mark.parametrize("case", FLEXIBLE_CASES, ids=case_id)
def test_unknown_tags_survive(case: tuple[type, int]) -> None:
    cls, version = case

    @FAST
    @given(message_strategy(cls, version, unknown=True))
    def check(obj: Any) -> None:
        data = obj.encode(version)
        back = cls.decode(data, version)
        assert back == obj
        assert back.unknown_tags == obj.unknown_tags
        assert back.encode(version) == data

    check()


@pytest.mark.parametrize("cls", ALL_MESSAGES, ids=lambda c: c.__name__)
def test_decoding_at_another_version_never_crashes(cls: type) -> None:
    """Bytes of one version read as another give an object or DecodeError, nothing else."""
    versions = list(versions_of(cls))

    @fuzz(10)
    @given(st.data())
    def check(data: st.DataObject) -> None:
        v1 = data.draw(st.sampled_from(versions))
        v2 = data.draw(st.sampled_from(versions))
        raw = data.draw(message_strategy(cls, v1)).encode(v1)
        with contextlib.suppress(DecodeError):
            cls.decode(raw, v2)

    check()


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_non_ignorable_absent_field_refuses_to_encode(case: tuple[type, int]) -> None:
    """A non-default value in a non-ignorable field the version lacks is an EncodeError (as in Kafka)."""
    cls, version = case
    for spec in cls.__kafka_fields__:
        if version in spec.versions or spec.ignorable:
            continue
        other = _non_default(spec)
        if other is None:
            continue
        with pytest.raises(EncodeError):
            cls(**{spec.name: other}).encode(version)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_ignorable_absent_field_is_dropped(case: tuple[type, int]) -> None:
    cls, version = case
    for spec in cls.__kafka_fields__:
        if version in spec.versions or not spec.ignorable:
            continue
        other = _non_default(spec)
        if other is None:
            continue
        assert cls(**{spec.name: other}).encode(version) == cls().encode(version)


def _non_default(spec: Any) -> Any:
    d = spec.default
    if isinstance(d, bool):
        return not d
    if isinstance(d, int):
        return d + 1 if d < 100 else d - 1
    if isinstance(d, str) or (d is None and spec.type == "string"):
        return (d or "") + "x"
    if isinstance(d, bytes):
        return d + b"x"
    return None
