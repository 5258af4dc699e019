"""An encoder written straight from Kafka's JSON message definitions: the byte-level oracle for APIs no client
library here implements (KIP-932's share APIs are in neither kafka-python 3.0 nor aiokafka 0.14).

It walks the JSON (not our declarations) field by field and writes Kafka's flexible encoding: compact strings,
bytes and arrays (unsigned varint length + 1, 0 for null), nullable structs behind an int8 marker (-1 null,
1 present), and a tagged-field section after every struct: the tagged fields of the version whose value is
not the JSON's default, in tag order, each as tag, size and the field's bytes (Kafka's generated
`write`). Only what those definitions use is supported; anything else raises, so a new definition cannot pass
by accident.
"""

from __future__ import annotations

import struct as _struct
import uuid
from typing import Any

from codec_kafka_json import load_kafka_json

from groupcoord.protocol.schema import Versions, snake

_INTS = {"int8": ">b", "int16": ">h", "int32": ">i", "int64": ">q", "uint16": ">H"}


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _in(text: str | None, version: int) -> bool:
    return text is not None and version in Versions(text)


def _value(typ: str, value: Any, nullable: bool) -> bytes:
    if value is None:
        if not nullable:
            raise ValueError(f"null {typ} that Kafka does not allow")
        return b"\xff" if typ[0].isupper() else b"\x00"
    if typ in _INTS:
        return _struct.pack(_INTS[typ], value)
    if typ == "bool":
        return b"\x01" if value else b"\x00"
    if typ == "uuid":
        assert isinstance(value, uuid.UUID)
        return value.bytes
    if typ == "string":
        data = value.encode()
        return _uvarint(len(data) + 1) + data
    if typ in ("bytes", "records"):
        return _uvarint(len(value) + 1) + bytes(value)
    raise ValueError(f"type {typ} is not supported by the JSON oracle")


def _json_default(fd: dict[str, Any]) -> Any:
    """The field's default as Kafka's JSON states it (or the type's zero)."""
    typ: str = fd["type"]
    raw = fd.get("default")
    if typ.startswith("[]"):
        return ()
    if raw == "null":
        return None
    if typ in _INTS:
        return int(raw, 0) if isinstance(raw, str) else int(raw or 0)
    if typ == "bool":
        return raw in (True, "true")
    if typ == "string":
        return raw or ""
    if typ == "uuid":
        return uuid.UUID(int=0)
    return raw


def _is_default(fd: dict[str, Any], value: Any, version: int) -> bool:
    if "fields" in fd and not fd["type"].startswith("[]"):
        return value is not None and all(
            _is_default(sub, getattr(value, snake(sub["name"])), version)
            for sub in fd["fields"]
            if _in(sub["versions"], version)
        )
    default = _json_default(fd)
    return value == default or (isinstance(default, tuple) and not value)


def _field(fd: dict[str, Any], value: Any, version: int) -> bytes:
    nullable = _in(fd.get("nullableVersions"), version)
    typ: str = fd["type"]
    if typ.startswith("[]"):
        if value is None:
            return _value(typ, None, nullable)  # raises unless Kafka allows null here
        out = bytearray(_uvarint(len(value) + 1))
        for item in value:
            out += (
                _struct_bytes(fd["fields"], item, version) if "fields" in fd else _value(typ[2:], item, False)
            )
        return bytes(out)
    if "fields" in fd:
        out = bytearray()
        if nullable:
            out += b"\xff" if value is None else b"\x01"
        if value is not None:
            out += _struct_bytes(fd["fields"], value, version)
        return bytes(out)
    return _value(typ, value, nullable)


def _fields(fields: list[dict[str, Any]], obj: Any, version: int) -> tuple[bytes, list[tuple[int, bytes]]]:
    out, tagged = bytearray(), []
    for fd in fields:
        if not _in(fd["versions"], version):
            continue
        value = getattr(obj, snake(fd["name"]))
        if "tag" in fd:
            if _in(fd.get("taggedVersions"), version) and not _is_default(fd, value, version):
                tagged.append((int(fd["tag"]), _field(fd, value, version)))
            continue
        out += _field(fd, value, version)
    return bytes(out), tagged


def _struct_bytes(fields: list[dict[str, Any]], obj: Any, version: int) -> bytes:
    if getattr(obj, "unknown_tags", ()):
        raise ValueError("unknown tagged fields are not supported by the JSON oracle")
    body, tagged = _fields(fields, obj, version)
    section = bytearray(_uvarint(len(tagged)))
    for tag, data in sorted(tagged):
        section += _uvarint(tag) + _uvarint(len(data)) + data
    return body + bytes(section)


def json_versions(cls: type) -> list[int]:
    """The versions of `cls` this oracle checks: flexible ones whose JSON is ours (tests/protocol/kafka_json)."""
    from codec_kafka_json import _OURS

    if not (_OURS / f"{cls.__name__}.json").exists():
        return []
    valid = cls.VALID_VERSIONS  # type: ignore[attr-defined]
    return [v for v in range(valid.lo, valid.hi + 1) if v in cls.FLEXIBLE_VERSIONS]  # type: ignore[attr-defined]


def json_encode(obj: Any, version: int) -> bytes:
    definition = load_kafka_json(type(obj).__name__)
    if not _in(definition["flexibleVersions"], version):
        raise ValueError("the JSON oracle writes flexible versions only")
    return _struct_bytes(definition["fields"], obj, version)
