"""Adapters between our message objects and the two independent codecs used as oracles.

- kafka-python 3.0's JSON-driven classes (`kafka.protocol.*`, one class per API built from Kafka's JSON);
- aiokafka 0.14's hand-written versioned `Struct` classes (`aiokafka.protocol.*`, `XxxRequest_vN`).

Both are compared field by field in wire order, so their own attribute names never matter. Known differences
in how they *represent* values (not in the bytes) are normalised here; see docs/codec-oracles.md.
"""

from __future__ import annotations

import importlib
import io
import pkgutil
import uuid
from functools import cache, cached_property
from typing import Any

from codec_helpers import is_flexible, plain, versions_of, wire_fields

from groupcoord.protocol.schema import ArrayOf, FieldSpec

ZERO_UUID = uuid.UUID(int=0)
INT32_MIN = -(2**31)

# --- kafka-python ---------------------------------------------------------------------------------------


@cache
def kafka_python_classes() -> dict[str, Any]:
    """kafka-python's JSON-driven request/response classes by Kafka message name."""
    import kafka.protocol
    from kafka.protocol.api_message import ApiMessage

    for info in pkgutil.walk_packages(kafka.protocol.__path__, "kafka.protocol."):
        if ".old" in info.name or info.name.endswith(("generate_stubs", "schemas")):
            continue
        try:
            importlib.import_module(info.name)
        except Exception:  # pragma: no cover - optional extras of kafka-python
            continue
    out: dict[str, Any] = {}
    todo = list(ApiMessage.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if getattr(cls, "_class_version", None) is None and getattr(cls, "_json", None):
            out[cls._json["name"]] = cls
    # APIs kafka-python does not bundle: its JSON-driven classes built from Kafka 4.3's definitions kept in
    # `kafka_json/` (ConsumerGroupHeartbeat, ConsumerGroupDescribe), so they get the same independent oracle
    from pathlib import Path

    for path in sorted((Path(__file__).parent / "kafka_json").glob("*.json")):
        if path.stem not in out:
            out[path.stem] = type(path.stem, (ApiMessage,), {}, load_json="kafka_json")
    return out


def kafka_python_versions(our_cls: type) -> list[int]:
    """Our versions that kafka-python's JSON (a newer Kafka release) still defines."""
    theirs = kafka_python_classes().get(our_cls.__name__)
    if theirs is None:
        return []
    lo, hi = theirs._valid_versions
    return [v for v in versions_of(our_cls) if lo <= v <= hi]


def _kp_fields(struct: Any, version: int, flexible: bool) -> list[Any]:
    out = []
    for fld in struct._fields:
        if not fld.for_version_q(version):
            continue
        if fld.tag is not None and not (flexible and fld.tagged_field_q(version)):
            continue
        out.append(fld)
    return out


def _kp_pairs(our_cls: type, struct: Any, version: int, flexible: bool) -> list[tuple[FieldSpec, Any]]:
    ours = list(wire_fields(our_cls, version, flexible))
    theirs = _kp_fields(struct, version, flexible)
    names = [s.name for s in ours], [t.name for t in theirs]
    assert len(ours) == len(theirs), f"{our_cls.__name__} v{version}: field lists differ: {names}"
    return list(zip(ours, theirs, strict=True))


def _is_bitfield(fld: Any) -> bool:
    return getattr(fld, "_type_str", None) == "bitfield"


def _bits_from_int(value: int) -> set[int] | None:
    raw = value & 0xFFFFFFFF
    bits = {i for i in range(32) if raw >> i & 1}
    return None if bits == {31} else bits


def _int_from_bits(bits: set[int] | None) -> int:
    raw = sum(1 << b for b in ({31} if bits is None else bits))
    return raw - (1 << 32) if raw >= 1 << 31 else raw


def to_kafka_python(obj: Any, our_cls: type, their_struct: Any, version: int, flexible: bool) -> Any:
    """A kafka-python data object with the same wire fields as `obj`."""
    kwargs: dict[str, Any] = {}
    for spec, fld in _kp_pairs(our_cls, their_struct, version, flexible):
        kwargs[fld.name] = _to_kp_value(getattr(obj, spec.name), spec, fld, version, flexible)
    return their_struct.data_class(version=version, **kwargs)


def _to_kp_value(value: Any, spec: FieldSpec, fld: Any, version: int, flexible: bool) -> Any:
    typ = spec.type
    if value is None:
        return None
    if isinstance(typ, ArrayOf):
        if isinstance(typ.element, type):
            return [to_kafka_python(v, typ.element, fld.array_of, version, flexible) for v in value]
        return list(value)
    if isinstance(typ, type):
        if spec.tag is not None and value == spec.default:
            return None  # kafka-python's default for a tagged struct; it writes the struct unless None
        return to_kafka_python(value, typ, fld, version, flexible)
    if _is_bitfield(fld):
        return _bits_from_int(value)
    return value


def from_kafka_python(
    item: Any, our_cls: type, their_struct: Any, version: int, flexible: bool
) -> dict[str, Any]:
    """A kafka-python data object as the plain dict `codec_helpers.plain` gives for ours."""
    out: dict[str, Any] = {}
    for spec, fld in _kp_pairs(our_cls, their_struct, version, flexible):
        out[spec.name] = _from_kp_value(getattr(item, fld.name), spec, fld, version, flexible)
    return out


def _from_kp_value(value: Any, spec: FieldSpec, fld: Any, version: int, flexible: bool) -> Any:
    typ = spec.type
    if _is_bitfield(fld):
        return _int_from_bits(value)
    if isinstance(typ, ArrayOf):
        if value is None:
            return None
        if isinstance(typ.element, type):
            return [from_kafka_python(v, typ.element, fld.array_of, version, flexible) for v in value]
        return [_scalar(v, typ.element) for v in value]
    if isinstance(typ, type):
        if value is None:
            if version in spec.nullable:
                return None  # a nullable struct (ConsumerGroupHeartbeatResponse.Assignment)
            return plain(spec.default, typ, version, flexible)
        return from_kafka_python(value, typ, fld, version, flexible)
    return _scalar(value, typ)


def _scalar(value: Any, typ: str) -> Any:
    if typ == "uuid" and value is None:
        return ZERO_UUID  # kafka-python decodes the zero UUID as None
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return value


def kafka_python_encode(obj: Any, version: int) -> bytes:
    our_cls = type(obj)
    theirs = kafka_python_classes()[our_cls.__name__]
    item = to_kafka_python(obj, our_cls, theirs._struct, version, is_flexible(our_cls, version))
    return bytes(item.encode(version=version))


def kafka_python_decode(our_cls: type, data: bytes, version: int) -> dict[str, Any]:
    from kafka.protocol.api_message import ApiMessage

    theirs = kafka_python_classes()[our_cls.__name__]
    # ApiMessage.decode itself: ApiVersionsResponse.decode overrides it to read any error response as v0
    item = ApiMessage.decode.__func__(theirs, data, version=version)  # type: ignore[attr-defined]
    return from_kafka_python(item, our_cls, theirs._struct, version, is_flexible(our_cls, version))


# --- hand-written versioned Struct classes (aiokafka, kafka-python's legacy layer) --------------------------


class _Fields(list):  # type: ignore[type-arg]
    """One struct's field values in wire order (as opposed to a list that is an array value)."""


_END = object()


def _flat(obj: Any, our_cls: type, version: int) -> _Fields:
    """`obj` as its field values in wire order; struct elements of arrays become nested `_Fields`."""
    out = _Fields()
    for spec in wire_fields(our_cls, version, False):
        value = getattr(obj, spec.name)
        typ = spec.type
        if value is not None and isinstance(typ, ArrayOf) and isinstance(typ.element, type):
            value = [_flat(v, typ.element, version) for v in value]
        elif value is not None and isinstance(typ, ArrayOf):
            value = list(value)
        elif value is not None and isinstance(typ, type):
            value = _flat(value, typ, version)
        out.append(value)
    return out


def _from_flat(values: list[Any], our_cls: type, version: int) -> dict[str, Any]:
    specs = list(wire_fields(our_cls, version, False))
    assert len(values) == len(specs), f"{our_cls.__name__} v{version}: {len(values)} fields vs {len(specs)}"
    out: dict[str, Any] = {}
    for spec, value in zip(specs, values, strict=True):
        typ = spec.type
        if value is not None and isinstance(typ, ArrayOf) and isinstance(typ.element, type):
            value = [_from_flat(v if isinstance(v, _Fields) else [v], typ.element, version) for v in value]
        elif value is not None and isinstance(typ, ArrayOf):
            value = list(value)
        elif value is not None and isinstance(typ, type):
            value = _from_flat(value, typ, version)
        out[spec.name] = value
    return out


class StructOracle:
    """An oracle made of `XxxRequest_vN` / `XxxResponse_vN` classes with a positional `SCHEMA`.

    Their schemas sometimes group consecutive fields into a nested Schema, or write an array of one-field
    structs as an array of the bare field; both are the same bytes, so values are reshaped to fit.
    """

    def __init__(self, package: str, types_module: str, flexible_ok: bool) -> None:
        self.package = package
        self.types_module = types_module
        self.flexible_ok = flexible_ok

    @cached_property
    def classes(self) -> dict[tuple[int, str, int], Any]:
        pkg = importlib.import_module(self.package)
        out: dict[tuple[int, str, int], Any] = {}
        for info in pkgutil.iter_modules(pkg.__path__):
            module = importlib.import_module(f"{self.package}.{info.name}")
            for name, obj in vars(module).items():
                if not (isinstance(obj, type) and obj.__module__ == module.__name__ and "_v" in name):
                    continue
                key, version = getattr(obj, "API_KEY", None), name.rsplit("_v", 1)[1]
                if not isinstance(key, int) or not version.isdigit() or not hasattr(obj, "SCHEMA"):
                    continue
                kind = "response" if "Response" in name else "request"
                # the version comes from the class name: aiokafka's ListGroupsRequest_v2 says API_VERSION = 1
                out[(key, kind, int(version))] = obj
        return out

    @cached_property
    def _types(self) -> tuple[type, type]:
        module = importlib.import_module(self.types_module)
        return module.Schema, module.Array

    def cls(self, our_cls: type, version: int) -> Any:
        return self.classes.get((our_cls.API_KEY, our_cls.KIND, version))  # type: ignore[attr-defined]

    def versions(self, our_cls: type) -> list[int]:
        return [
            v
            for v in versions_of(our_cls)
            if (self.flexible_ok or not is_flexible(our_cls, v)) and self.cls(our_cls, v) is not None
        ]

    def encode(self, obj: Any, version: int) -> bytes:
        theirs = self.cls(type(obj), version)
        it = iter(_flat(obj, type(obj), version))
        args = self._fit_schema(it, theirs.SCHEMA)
        assert next(it, _END) is _END, "oracle schema has fewer fields"
        return bytes(theirs(*args).encode())

    def decode(self, our_cls: type, data: bytes, version: int) -> dict[str, Any]:
        theirs = self.cls(our_cls, version)
        stream = io.BytesIO(data)
        item = theirs.decode(stream)
        assert stream.read() == b"", "oracle left bytes unread"
        values = self._unfit_schema([item.get_item(n) for n in theirs.SCHEMA.names], theirs.SCHEMA)
        return _from_flat(values, our_cls, version)

    def _fit_schema(self, values: Any, schema: Any) -> tuple[Any, ...]:
        schema_cls, _ = self._types
        out = []
        for t in schema.fields:
            out.append(
                self._fit_schema(values, t) if isinstance(t, schema_cls) else self._fit_value(next(values), t)
            )
        return tuple(out)

    def _fit_value(self, value: Any, t: Any) -> Any:
        schema_cls, array_cls = self._types
        if value is None or not isinstance(t, array_cls):
            return value
        out = []
        for elem in value:
            if isinstance(elem, _Fields) and isinstance(t.array_of, schema_cls):
                it = iter(elem)
                out.append(self._fit_schema(it, t.array_of))
                assert next(it, _END) is _END, "oracle schema has fewer fields"
            elif isinstance(elem, _Fields):  # a one-field struct written as the bare field
                assert len(elem) == 1, "oracle element is not a struct"
                out.append(self._fit_value(elem[0], t.array_of))
            else:
                out.append(self._fit_value(elem, t.array_of))
        return out

    def _unfit_schema(self, values: Any, schema: Any) -> list[Any]:
        schema_cls, _ = self._types
        out: list[Any] = []
        for v, t in zip(values, schema.fields, strict=True):
            if isinstance(t, schema_cls):
                out.extend(self._unfit_schema(v, t))
            else:
                out.append(self._unfit_value(v, t))
        return out

    def _unfit_value(self, value: Any, t: Any) -> Any:
        schema_cls, array_cls = self._types
        if value is None or not isinstance(t, array_cls):
            return value
        if isinstance(t.array_of, schema_cls):
            return [_Fields(self._unfit_schema(e, t.array_of)) for e in value]
        return [self._unfit_value(e, t.array_of) for e in value]


# aiokafka's flexible encoders are wrong (CLIENTS.md §10): use it for non-flexible versions only.
AIOKAFKA = StructOracle("aiokafka.protocol", "aiokafka.protocol.types", flexible_ok=False)
# kafka-python's legacy struct layer, for the old versions its JSON layer no longer has.
KAFKA_PYTHON_LEGACY = StructOracle("kafka.protocol.old", "kafka.protocol.old.types", flexible_ok=False)


def kafka_python_legacy_versions(our_cls: type) -> list[int]:
    json_versions = set(kafka_python_versions(our_cls))
    return [v for v in KAFKA_PYTHON_LEGACY.versions(our_cls) if v not in json_versions]
