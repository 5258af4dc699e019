"""Shared helpers for the codec tests: the message registry, hypothesis strategies built from declarations.

Imported by the test modules in this directory by its bare name (pytest puts the directory on sys.path).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from groupcoord.protocol.messages import ALL_MESSAGES as _REGISTRY
from groupcoord.protocol.schema import ArrayOf, FieldSpec

ALL_MESSAGES: list[type] = list(_REGISTRY)


def versions_of(cls: type) -> range:
    valid = cls.VALID_VERSIONS  # type: ignore[attr-defined]
    return range(valid.lo, valid.hi + 1)


def is_flexible(cls: type, version: int) -> bool:
    return version in cls.FLEXIBLE_VERSIONS  # type: ignore[attr-defined]


def all_cases() -> list[tuple[type, int]]:
    """Every (message class, version) we declare."""
    return [(cls, v) for cls in ALL_MESSAGES for v in versions_of(cls)]


def case_id(case: tuple[type, int]) -> str:
    cls, version = case
    return f"{cls.__name__}-v{version}"


def specs(cls: type) -> tuple[FieldSpec, ...]:
    return cls.__kafka_fields__  # type: ignore[attr-defined]


def on_wire(spec: FieldSpec, version: int, flexible: bool) -> bool:
    """Whether the field is written at this version (regular, or tagged in a flexible version)."""
    if version not in spec.versions:
        return False
    if spec.tag is None:
        return True
    return flexible and version in spec.tagged_versions


def wire_fields(cls: type, version: int, flexible: bool) -> Iterator[FieldSpec]:
    return (s for s in specs(cls) if on_wire(s, version, flexible))


# Examples per hypothesis test are kept small so the whole suite stays fast; CODEC_FUZZ_SCALE=20 digs deeper.
FUZZ_SCALE = int(os.environ.get("CODEC_FUZZ_SCALE", "1"))


def fuzz(examples: int) -> settings:
    """Hypothesis settings for the codec tests: no deadline, no example database, `examples` scaled."""
    return settings(
        max_examples=examples * FUZZ_SCALE,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# --- strategies -------------------------------------------------------------------------------------------

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uvarint": (0, 2**31 - 1),
    "varint": (-(2**31), 2**31 - 1),
    "varlong": (-(2**63), 2**63 - 1),
}

TEXT = st.text(max_size=12)
BINARY = st.binary(max_size=24)


def scalar_strategy(kind: str) -> st.SearchStrategy[Any]:
    if kind in _INT_RANGES:
        lo, hi = _INT_RANGES[kind]
        return st.integers(lo, hi)
    if kind == "bool":
        return st.booleans()
    if kind == "float64":
        return st.floats(allow_nan=False)
    if kind == "uuid":
        return st.uuids(allow_nil=True) | st.just(uuid.UUID(int=0))
    if kind == "string":
        return TEXT
    if kind in ("bytes", "records"):
        return BINARY
    raise AssertionError(f"no strategy for {kind}")


def unknown_tags_strategy(known: set[int]) -> st.SearchStrategy[tuple[tuple[int, bytes], ...]]:
    """Sorted, distinct tags that the struct does not know, with arbitrary payloads."""
    tags = st.integers(0, 300).filter(lambda t: t not in known)
    return st.dictionaries(tags, st.binary(max_size=6), max_size=3).map(lambda d: tuple(sorted(d.items())))


def known_tags(cls: type, version: int, flexible: bool) -> set[int]:
    return {s.tag for s in specs(cls) if s.tag is not None and on_wire(s, version, flexible)}


def field_strategy(
    typ: Any, spec: FieldSpec, version: int, flexible: bool, unknown: bool, depth: int
) -> st.SearchStrategy[Any]:
    if isinstance(typ, ArrayOf):
        elem = typ.element
        if isinstance(elem, type):
            inner = struct_strategy(elem, version, flexible, unknown, depth + 1)
        else:
            inner = scalar_strategy(elem)
        base: st.SearchStrategy[Any] = st.lists(inner, max_size=3 if depth < 2 else 2).map(tuple)
    elif isinstance(typ, type):
        base = struct_strategy(typ, version, flexible, unknown, depth + 1)
    else:
        base = scalar_strategy(typ)
    if version in spec.nullable:
        return st.none() | base
    return base


def struct_strategy(
    cls: type, version: int, flexible: bool, unknown: bool = False, depth: int = 0
) -> st.SearchStrategy[Any]:
    """Objects of `cls` with every field that is on the wire at `version` set; the rest keep defaults."""
    kwargs = {
        s.name: field_strategy(s.type, s, version, flexible, unknown, depth)
        for s in wire_fields(cls, version, flexible)
    }
    if unknown and flexible:
        kwargs["unknown_tags"] = unknown_tags_strategy(known_tags(cls, version, flexible))
    return st.builds(cls, **kwargs)


def message_strategy(cls: type, version: int, unknown: bool = False) -> st.SearchStrategy[Any]:
    return struct_strategy(cls, version, is_flexible(cls, version), unknown)


# --- plain views for comparing with other implementations -------------------------------------------------


def plain(obj: Any, cls: type, version: int, flexible: bool) -> dict[str, Any]:
    """The fields of `obj` that are on the wire at `version`, recursively, as dicts/lists of plain values."""
    out: dict[str, Any] = {}
    for s in wire_fields(cls, version, flexible):
        out[s.name] = plain_value(getattr(obj, s.name), s.type, version, flexible)
    return out


def plain_value(value: Any, typ: Any, version: int, flexible: bool) -> Any:
    if value is None:
        return None
    if isinstance(typ, ArrayOf):
        return [plain_value(v, typ.element, version, flexible) for v in value]
    if isinstance(typ, type):
        return plain(value, typ, version, flexible)
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return value
