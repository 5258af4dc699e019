"""Messages declared once, as data; construct codecs built from the declarations.

A message is a class whose fields are declared with `f(type, versions, ...)`, the way Kafka's JSON message
definitions declare them: the versions a field exists in, the versions it may be null in, its default, its tag
if it is a tagged field, and whether it is ignorable. `@message`/`@struct` turn the class into a frozen, slotted
dataclass holding the union of every version's fields (absent fields keep their defaults), and attach
`decode(data, version)` / `encode(version)`.

Per (class, version) one `Record` construct is built from the declaration on first use, compiled with
construct's `.compile()` and cached. `Record` is construct's `Struct` specialised to Kafka: it builds the
dataclass straight from the parsed values (no intermediate `Container`), reads the tagged-field section of
flexible versions and keeps unknown tags, and refuses to write a non-ignorable field that the version lacks.
"""

from __future__ import annotations

import dataclasses
import inspect
import io as _io
import re
from collections.abc import Callable
from typing import Any, BinaryIO, TypeVar, dataclass_transform

from construct import Construct

from groupcoord.protocol.errors import DecodeError, EncodeError
from groupcoord.protocol.primitives import (
    RUNTIME_IMPORT,
    Array,
    NullableStruct,
    r_exact,
    r_uvarint,
    scalar,
    uvarint_bytes,
)

T = TypeVar("T")

INT8, INT16, UINT16, INT32, UINT32, INT64, FLOAT64 = (
    "int8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "float64",
)
BOOL, UUID, STRING, BYTES, RECORDS = "bool", "uuid", "string", "bytes", "records"

_MISSING: Any = dataclasses.MISSING


class Versions:
    """A version range as Kafka writes it: "0+", "3-7", "none"."""

    __slots__ = ("hi", "lo", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        if text == "none":
            self.lo, self.hi = 1, 0
        elif text.endswith("+"):
            self.lo, self.hi = int(text[:-1]), 0x7FFF
        elif "-" in text:
            lo, hi = text.split("-")
            self.lo, self.hi = int(lo), int(hi)
        else:
            self.lo = self.hi = int(text)

    def __contains__(self, version: int) -> bool:
        return self.lo <= version <= self.hi

    def __repr__(self) -> str:
        return self.text


@dataclasses.dataclass(frozen=True)
class ArrayOf:
    element: Any  # a primitive type name or a @struct class


def array(element: Any) -> ArrayOf:
    return ArrayOf(element)


@dataclasses.dataclass(frozen=True)
class FieldSpec:
    name: str
    type: Any
    versions: Versions
    nullable: Versions
    default: Any
    tag: int | None
    tagged_versions: Versions
    ignorable: bool
    flexible: (
        bool  # False: stays a classic (non-compact) encoding even in flexible versions (header ClientId)
    )


@dataclasses.dataclass(frozen=True)
class _Decl:
    type: Any
    versions: str
    nullable: str
    tag: int | None
    tagged_versions: str
    ignorable: bool
    flexible: bool


def _zero(typ: Any) -> Any:
    if isinstance(typ, ArrayOf):
        return ()
    if isinstance(typ, type):
        return typ()
    return scalar(typ).default


def f(
    typ: Any,
    versions: str = "0+",
    *,
    nullable: str = "none",
    default: Any = _MISSING,
    tag: int | None = None,
    tagged_versions: str | None = None,
    ignorable: bool = False,
    flexible: bool = True,
) -> Any:
    """Declare one field (used as a dataclass field default)."""
    if default is _MISSING:
        default = _zero(typ)
    decl = _Decl(typ, versions, nullable, tag, tagged_versions or versions, ignorable, flexible)
    if isinstance(default, (list, dict)):
        raise TypeError("defaults must be immutable")
    return dataclasses.field(default=default, metadata={"kafka": decl})


UNKNOWN_TAGS = "unknown_tags"


def _finish(cls: type[T]) -> type[T]:
    anns = dict(inspect.get_annotations(cls))
    anns[UNKNOWN_TAGS] = "tuple[tuple[int, bytes], ...]"
    cls.__annotations__ = anns
    setattr(cls, UNKNOWN_TAGS, dataclasses.field(default=(), repr=False, compare=True))
    dc = dataclasses.dataclass(frozen=True, slots=True)(cls)
    specs: list[FieldSpec] = []
    for fld in dataclasses.fields(dc):
        if fld.name == UNKNOWN_TAGS:
            continue
        decl: _Decl | None = fld.metadata.get("kafka")
        if decl is None:
            raise TypeError(f"{cls.__name__}.{fld.name} is not declared with f()")
        specs.append(
            FieldSpec(
                fld.name,
                decl.type,
                Versions(decl.versions),
                Versions(decl.nullable),
                fld.default,
                decl.tag,
                Versions(decl.tagged_versions),
                decl.ignorable,
                decl.flexible,
            )
        )
    dc.__kafka_fields__ = tuple(specs)  # type: ignore[attr-defined]
    dc._records = {}  # type: ignore[attr-defined]
    return dc


@dataclass_transform(frozen_default=True, field_specifiers=(f,))
def struct(cls: type[T]) -> type[T]:
    """A nested struct (array element) or a standalone payload."""
    return _finish(cls)


class MessageMeta:
    """What `@message` attaches to a class: its API key, kind and version ranges."""

    api_key: int
    kind: str
    valid: Versions
    flexible: Versions


@dataclass_transform(frozen_default=True, field_specifiers=(f,))
def message(api_key: int, kind: str, valid: str, flexible: str) -> Callable[[type[T]], type[T]]:
    """A top-level request, response or header. `kind` is "request", "response" or "header"."""

    def wrap(cls: type[T]) -> type[T]:
        dc = _finish(cls)
        dc.API_KEY = api_key  # type: ignore[attr-defined]
        dc.KIND = kind  # type: ignore[attr-defined]
        dc.VALID_VERSIONS = Versions(valid)  # type: ignore[attr-defined]
        dc.FLEXIBLE_VERSIONS = Versions(flexible)  # type: ignore[attr-defined]
        dc.decode = classmethod(_decode)  # type: ignore[attr-defined]
        dc.encode = _encode  # type: ignore[attr-defined]
        return dc

    return wrap


# --- the construct built per version ------------------------------------------------------------------------


def _construct_for(typ: Any, spec: FieldSpec, version: int, flexible: bool) -> Construct:
    compact = flexible and spec.flexible
    nullable = version in spec.nullable
    if isinstance(typ, ArrayOf):
        elem = typ.element
        if isinstance(elem, type):
            sub: Construct = record(elem, version, flexible)
        else:
            sub = scalar(elem, compact=compact)
        return Array(sub, nullable=nullable, compact=compact)
    if isinstance(typ, type):
        if nullable:
            return NullableStruct(record(typ, version, flexible))
        return record(typ, version, flexible)
    return scalar(typ, compact=compact, nullable=nullable)


_SIMPLE_LITERAL = (int, str, bytes, bool, type(None))


class Record(Construct):
    """construct's Struct for a Kafka struct at one version: parses to (and builds from) a frozen dataclass."""

    def __init__(self, cls: type, version: int, flexible: bool) -> None:
        super().__init__()
        self.cls = cls
        self.version = version
        self.flexible = flexible
        self.specs: tuple[FieldSpec, ...] = cls.__kafka_fields__  # type: ignore[attr-defined]
        self.defaults = tuple(s.default for s in self.specs)
        # per field: its construct if it is a regular (in-order) field at this version, else None
        self.regular: list[Construct | None] = []
        self.tagged: dict[int, tuple[int, Construct]] = {}  # tag -> (field index, construct)
        for i, spec in enumerate(self.specs):
            present = version in spec.versions
            if present and spec.tag is not None:
                if flexible and version in spec.tagged_versions:
                    self.tagged[spec.tag] = (i, _construct_for(spec.type, spec, version, flexible))
                self.regular.append(None)
            elif present:
                self.regular.append(_construct_for(spec.type, spec, version, flexible))
            else:
                self.regular.append(None)

    # -- interpreted path

    def _parse(self, stream: BinaryIO, context: Any, path: str) -> Any:
        values = list(self.defaults)
        for i, sub in enumerate(self.regular):
            if sub is not None:
                values[i] = sub._parsereport(stream, context, path)
        unknown: tuple = ()
        if self.flexible:
            unknown = self.read_tags(stream, values)
        return self.cls(*values, unknown)

    def _build(self, obj: Any, stream: BinaryIO, context: Any, path: str) -> Any:
        self.check_absent(obj)
        for spec, sub in zip(self.specs, self.regular, strict=True):
            if sub is not None:
                sub._build(getattr(obj, spec.name), stream, context, path)
        if self.flexible:
            self.write_tags(obj, stream)
        return obj

    def read_tags(self, stream: BinaryIO, values: list[Any]) -> tuple:
        n = r_uvarint(stream)
        unknown: list[tuple[int, bytes]] = []
        last = -1
        for _ in range(n):
            tag = r_uvarint(stream)
            if tag <= last:
                raise ValueError(f"tagged fields out of order: {tag} after {last}")
            last = tag
            size = r_uvarint(stream)
            data = r_exact(stream, size)
            known = self.tagged.get(tag)
            if known is None:
                unknown.append((tag, data))
            else:
                index, sub = known
                sub_stream = _io.BytesIO(data)
                values[index] = sub._parsereport(sub_stream, None, "(tag)")
                if sub_stream.tell() != size:
                    raise ValueError(f"tagged field {tag} has {size - sub_stream.tell()} trailing bytes")
        return tuple(unknown)

    def write_tags(self, obj: Any, stream: BinaryIO) -> None:
        unknown = getattr(obj, UNKNOWN_TAGS)
        if not self.tagged and not unknown:
            stream.write(b"\x00")
            return
        items: list[tuple[int, bytes]] = list(unknown)
        for tag, (index, sub) in self.tagged.items():
            value = getattr(obj, self.specs[index].name)
            if value != self.specs[index].default:
                buf = _io.BytesIO()
                sub._build(value, buf, None, "(tag)")
                items.append((tag, buf.getvalue()))
        items.sort(key=lambda t: t[0])
        out = [uvarint_bytes(len(items))]
        for tag, data in items:
            out.append(uvarint_bytes(tag))
            out.append(uvarint_bytes(len(data)))
            out.append(data)
        stream.write(b"".join(out))

    def check_absent(self, obj: Any) -> None:
        """Kafka refuses to write a non-default value for a non-ignorable field the version does not have."""
        for spec in self.specs:
            if spec.ignorable or self.version in spec.versions:
                continue
            if getattr(obj, spec.name) != spec.default:
                raise EncodeError(
                    f"{self.cls.__name__}.{spec.name} cannot be set at version {self.version} "
                    f"(exists in {spec.versions})"
                )

    # -- compiled path

    def _emitparse(self, code: Any) -> str:
        code.append(RUNTIME_IMPORT)
        fid = code.allocateId()
        me = f"linkedinstances[{id(self)}]"
        code.linkedinstances[id(self)] = self
        lines = [f"def parse_record_{fid}(io, this):"]
        names = []
        for i, sub in enumerate(self.regular):
            var = f"v{i}"
            names.append(var)
            if sub is not None:
                lines.append(f"    {var} = {sub._compileparse(code)}")
            else:
                default = self.defaults[i]
                if isinstance(default, _SIMPLE_LITERAL) or default == ():
                    lines.append(f"    {var} = {default!r}")
                else:
                    lines.append(f"    {var} = {me}.defaults[{i}]")
        if self.flexible:
            if self.tagged:
                lines.append(f"    values = [{', '.join(names)}]")
                lines.append(f"    unknown = {me}.read_tags(io, values)")
                lines.append(f"    return {me}.cls(*values, unknown)")
            else:
                lines.append("    b = io.read(1)")
                lines.append("    if b == b'\\x00':")
                lines.append("        unknown = ()")
                lines.append("    elif not b:")
                lines.append("        raise WireError('tagged fields truncated')")
                lines.append("    else:")
                lines.append("        io.seek(-1, 1)")
                lines.append(f"        unknown = {me}.read_tags(io, [])")
                lines.append(f"    return {me}.cls({', '.join([*names, 'unknown'])})")
        else:
            lines.append(f"    return {me}.cls({', '.join(names)})")
        code.append("\n".join(lines))
        return f"parse_record_{fid}(io, this)"

    def _emitbuild(self, code: Any) -> str:
        code.append(RUNTIME_IMPORT)
        fid = code.allocateId()
        me = f"linkedinstances[{id(self)}]"
        code.linkedinstances[id(self)] = self
        lines = [f"def build_record_{fid}(obj, io, this):", "    _o = obj"]
        if any(not s.ignorable and self.version not in s.versions for s in self.specs):
            lines.append(f"    {me}.check_absent(_o)")
        for spec, sub in zip(self.specs, self.regular, strict=True):
            if sub is not None:
                lines.append(f"    obj = _o.{spec.name}")
                lines.append(f"    {sub._compilebuild(code)}")
        if self.flexible:
            if self.tagged:
                lines.append(f"    {me}.write_tags(_o, io)")
            else:
                lines.append(f"    if _o.{UNKNOWN_TAGS}:")
                lines.append(f"        {me}.write_tags(_o, io)")
                lines.append("    else:")
                lines.append("        io.write(b'\\x00')")
        lines.append("    return _o")
        code.append("\n".join(lines))
        return f"build_record_{fid}(obj, io, this)"


def record(cls: type, version: int, flexible: bool) -> Record:
    """The (uncompiled) Record for a struct at a version; cached on the class."""
    key = (version, flexible)
    cache: dict = cls._records  # type: ignore[attr-defined]
    rec = cache.get(key)
    if rec is None:
        rec = cache[key] = Record(cls, version, flexible)
    return rec


class Codec:
    """The compiled parse and build functions for one message at one version."""

    __slots__ = ("build", "name", "parse", "record", "version")

    def __init__(self, cls: type, version: int) -> None:
        flexible = version in cls.FLEXIBLE_VERSIONS  # type: ignore[attr-defined]
        self.record = record(cls, version, flexible)
        compiled = self.record.compile()
        self.parse = compiled.parsefunc
        self.build = compiled.buildfunc
        self.name = cls.__name__
        self.version = version


_CODECS: dict[tuple[type, int], Codec] = {}


def codec(cls: type, version: int) -> Codec:
    """The cached compiled codec for a message class at a version (built on first use)."""
    key = (cls, version)
    c = _CODECS.get(key)
    if c is None:
        if version not in cls.VALID_VERSIONS:  # type: ignore[attr-defined]
            raise ValueError(f"{cls.__name__} has no version {version}")
        c = _CODECS[key] = Codec(cls, version)
    return c


def decode_from(cls: type, stream: _io.BytesIO, version: int, total: int, strict: bool = True) -> Any:
    """Decode one message from `stream` (positioned at its start).

    `strict` requires every byte up to `total` to be used. Request bodies are decoded with `strict=False`:
    Kafka's request parser reads the fields of the version and ignores whatever follows (librdkafka 2.12+
    sends an all-topics Metadata v12 with 3 bytes to spare), so the caller counts the rest instead.
    """
    start = stream.tell()
    try:
        c = codec(cls, version)
    except ValueError as exc:
        raise DecodeError(cls.__name__, version, 0, str(exc)) from None
    try:
        obj = c.parse(stream, None)
    except Exception as exc:  # the codec's contract: nothing but DecodeError escapes
        reason = str(exc) or type(exc).__name__
        raise DecodeError(cls.__name__, version, stream.tell() - start, reason) from None
    if strict and stream.tell() != total:
        raise DecodeError(
            cls.__name__, version, stream.tell() - start, f"{total - stream.tell()} trailing bytes"
        )
    return obj


def _decode(cls: type[T], data: bytes, version: int) -> T:
    return decode_from(cls, _io.BytesIO(data), version, len(data))


def _encode(self: Any, version: int) -> bytes:
    stream = _io.BytesIO()
    encode_into(self, stream, version)
    return stream.getvalue()


def encode_into(obj: Any, stream: BinaryIO, version: int) -> None:
    c = codec(type(obj), version)
    try:
        c.build(obj, stream, None)
    except EncodeError:
        raise
    except Exception as exc:
        raise EncodeError(f"cannot encode {c.name} v{version}: {exc}") from exc


_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def snake(name: str) -> str:
    """Kafka's CamelCase field names as our snake_case attribute names (used by tests against oracles)."""
    return _CAMEL.sub("_", name).lower()
