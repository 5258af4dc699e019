"""Compare our message declarations with Kafka's JSON message definitions.

The JSON is read from kafka-python's bundled copy (`kafka/protocol/schemas/resources`), which is Kafka's
own `clients/src/main/resources/common/message/*.json`. Only what matters on the wire is compared, and only
within the versions we declare valid: field order, versions, nullable versions, defaults, tags and tagged
versions, ignorable, per-field flexibleVersions, and the element type of arrays and nested structs.
"""

from __future__ import annotations

import importlib.resources
import json
import re
import uuid
from pathlib import Path
from typing import Any

from groupcoord.protocol.schema import ArrayOf, FieldSpec, Versions, snake

_COMMENTS = re.compile(r"(?m)^\s*//.*$")
_OURS = Path(__file__).parent / "kafka_json"


def load_kafka_json(name: str) -> dict[str, Any]:
    """Kafka's JSON definition `name` (e.g. "JoinGroupRequest") from `kafka_json/` beside this file when it
    is there (Kafka 4.3's definitions of APIs kafka-python does not bundle, such as ConsumerGroupHeartbeat
    and ConsumerGroupDescribe, and Kafka 4.4's of the APIs whose 4.4 versions we declare; Apache-2.0, headers
    kept), else as bundled with kafka-python."""
    bundled = importlib.resources.files("kafka.protocol.schemas.resources").joinpath(f"{name}.json")
    local = Path(__file__).parent / "kafka_json" / f"{name}.json"
    text = local.read_text() if local.is_file() else bundled.read_text()
    definition = json.loads(_COMMENTS.sub("", text))
    common = {c["name"]: c["fields"] for c in definition.get("commonStructs", [])}
    if common:
        _inline_common(definition["fields"], common)
    return definition


def _inline_common(fields: list[dict[str, Any]], common: dict[str, list[dict[str, Any]]]) -> None:
    """Give fields typed by a `commonStructs` entry (AddPartitionsToTxn) that struct's fields inline."""
    for fd in fields:
        name = fd["type"].removeprefix("[]")
        if "fields" not in fd and name in common:
            fd["fields"] = common[name]
        if "fields" in fd:
            _inline_common(fd["fields"], common)


def _vset(text: str | None, within: set[int]) -> set[int]:
    if text is None:
        return set()
    v = Versions(text)
    return {x for x in within if x in v}


def _json_default(field: dict[str, Any]) -> Any:
    """The default Kafka's generator gives a field (MessageDataGenerator / FieldSpec rules)."""
    typ: str = field["type"]
    raw = field.get("default")
    if typ.startswith("[]"):
        return None if raw == "null" else ()
    if "fields" in field or typ[0].isupper():
        return None if raw == "null" else "struct"
    if raw == "null":
        return None
    if typ in ("int8", "int16", "uint16", "int32", "int64", "uint32"):
        if raw is None or raw == "":
            return 0
        if isinstance(raw, int):
            return raw
        return int(raw, 16) if raw.lower().startswith(("0x", "-0x")) else int(raw)
    if typ == "bool":
        return raw in (True, "true")
    if typ == "float64":
        return float(raw or 0)
    if typ == "uuid":
        return uuid.UUID(int=0) if raw in (None, "") else uuid.UUID(raw)
    if typ == "string":
        return raw or ""
    if typ in ("bytes", "records"):
        return b""
    raise AssertionError(f"unhandled JSON type {typ}")


def compare_struct(
    cls: type, fields: list[dict[str, Any]], within: set[int], path: str, flexible: set[int], strict: bool
) -> list[str]:
    """Differences between the declaration of `cls` and JSON `fields`, for the versions in `within`."""
    problems: list[str] = []
    ours: list[FieldSpec] = list(cls.__kafka_fields__)  # type: ignore[attr-defined]
    theirs = [fd for fd in fields if _vset(fd["versions"], within)]
    our_names = [s.name for s in ours if {v for v in within if v in s.versions}]
    their_names = [snake(fd["name"]) for fd in theirs]
    if our_names != their_names:
        return [f"{path}: field order/set differs: ours {our_names} vs Kafka {their_names}"]
    by_name = {s.name: s for s in ours}
    for fd in theirs:
        name = snake(fd["name"])
        spec = by_name[name]
        where = f"{path}.{name}"
        present = _vset(fd["versions"], within)
        if {v for v in within if v in spec.versions} != present:
            problems.append(f"{where}: versions {spec.versions} vs {fd['versions']}")
        nullable_theirs = _vset(fd.get("nullableVersions"), present)
        nullable_ours = {v for v in present if v in spec.nullable}
        if nullable_ours != nullable_theirs:
            problems.append(f"{where}: nullable {spec.nullable} vs {fd.get('nullableVersions')}")
        if spec.tag != fd.get("tag"):
            problems.append(f"{where}: tag {spec.tag} vs {fd.get('tag')}")
        if spec.tag is not None:
            tv_theirs = _vset(fd.get("taggedVersions"), present)
            tv_ours = {v for v in present if v in spec.tagged_versions}
            if tv_ours != tv_theirs:
                problems.append(
                    f"{where}: taggedVersions {spec.tagged_versions} vs {fd.get('taggedVersions')}"
                )
        # "ignorable" only matters at versions (within ours) that lack the field; unless strict, compare it there
        if (strict or present != within) and bool(spec.ignorable) != bool(fd.get("ignorable", False)):
            problems.append(f"{where}: ignorable {spec.ignorable} vs {fd.get('ignorable', False)}")
        flex_theirs = fd.get("flexibleVersions")
        if flex_theirs is not None:
            field_flexible = _vset(flex_theirs, present)
            if spec.flexible != bool(field_flexible & flexible):
                problems.append(f"{where}: flexibleVersions {flex_theirs} but flexible={spec.flexible}")
        elif not spec.flexible:
            problems.append(f"{where}: declared flexible=False but Kafka has no flexibleVersions override")
        typ: str = fd["type"]
        default = _json_default(fd)
        if typ.startswith("[]"):
            if not isinstance(spec.type, ArrayOf):
                problems.append(f"{where}: Kafka type {typ}, ours {spec.type}")
                continue
            elem = spec.type.element
            if "fields" in fd:
                if not isinstance(elem, type):
                    problems.append(f"{where}: Kafka struct array, ours array of {elem}")
                    continue
                problems += compare_struct(elem, fd["fields"], present, where + "[]", flexible, strict)
            elif elem != typ[2:]:
                problems.append(f"{where}: Kafka type {typ}, ours []{elem}")
            if spec.default != default:
                problems.append(f"{where}: default {spec.default!r} vs {default!r}")
        elif "fields" in fd:
            if not isinstance(spec.type, type):
                problems.append(f"{where}: Kafka struct {typ}, ours {spec.type}")
                continue
            problems += compare_struct(spec.type, fd["fields"], present, where, flexible, strict)
            if default is None and spec.default is not None:
                problems.append(f"{where}: default should be null")
        else:
            if spec.type != typ:
                problems.append(f"{where}: type {spec.type} vs {typ}")
            if spec.default != default or type(spec.default) is not type(default):
                problems.append(f"{where}: default {spec.default!r} vs {default!r}")
    return problems


def compare_message(cls: type, definition: dict[str, Any], strict: bool = False) -> list[str]:
    """Differences between a `@message` class and its JSON definition, over the versions both declare.

    Newer Kafka releases drop old versions (raising the JSON's lowest valid version); the versions below it
    cannot be checked against that JSON and are left out. With `strict`, `ignorable` is compared everywhere,
    not only where it changes what may be written.
    """
    valid: Versions = cls.VALID_VERSIONS  # type: ignore[attr-defined]
    kafka_valid = _vset(definition["validVersions"], set(range(0, 100)))
    within = {v for v in range(valid.lo, valid.hi + 1) if v in kafka_valid}
    problems: list[str] = []
    if definition["apiKey"] != cls.API_KEY:  # type: ignore[attr-defined]
        problems.append(f"api key {cls.API_KEY} vs {definition['apiKey']}")  # type: ignore[attr-defined]
    if definition["type"] != cls.KIND:  # type: ignore[attr-defined]
        problems.append(f"kind {cls.KIND} vs {definition['type']}")  # type: ignore[attr-defined]
    if valid.hi > max(kafka_valid):
        problems.append(f"valid {valid} goes beyond Kafka's {definition['validVersions']}")
    flexible = {v for v in within if v in cls.FLEXIBLE_VERSIONS}  # type: ignore[attr-defined]
    if flexible != _vset(definition["flexibleVersions"], within):
        problems.append(f"flexible {cls.FLEXIBLE_VERSIONS} vs {definition['flexibleVersions']}")  # type: ignore[attr-defined]
    return problems + compare_struct(cls, definition["fields"], within, cls.__name__, flexible, strict)
