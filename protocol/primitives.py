"""Kafka's wire primitives as construct classes.

Each primitive is one `construct.Construct` subclass whose interpreted `_parse`/`_build` and compiled
`_emitparse`/`_emitbuild` call the same small runtime functions below. Keeping one implementation for both
paths means `.compile()` changes speed, never behaviour. The runtime functions check every length against the
bytes actually present: construct's own compiled `Bytes` does not, and Kafka frames are untrusted input.

Varints are bounded (5 bytes for 32-bit, 10 for 64-bit values): construct's `VarInt` is not, and would read a
6-byte varint as a 35-bit number.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any, BinaryIO

from construct import Construct

from groupcoord.protocol.errors import EncodeError


class WireError(Exception):
    """Raised by the runtime readers; the codec turns it into `DecodeError` with the byte offset."""


# --- runtime functions, shared by interpreted and compiled paths -------------------------------------------

_S_I8 = struct.Struct(">b")
_S_I16 = struct.Struct(">h")
_S_U16 = struct.Struct(">H")
_S_I32 = struct.Struct(">i")
_S_U32 = struct.Struct(">I")
_S_I64 = struct.Struct(">q")
_S_F64 = struct.Struct(">d")


def r_exact(io: BinaryIO, n: int) -> bytes:
    data = io.read(n)
    if len(data) != n:
        raise WireError(f"needed {n} bytes, {len(data)} left")
    return data


def r_i8(io: BinaryIO) -> int:
    return _S_I8.unpack(io.read(1))[0]  # a short read raises struct.error


def r_i16(io: BinaryIO) -> int:
    return _S_I16.unpack(io.read(2))[0]  # a short read raises struct.error


def r_u16(io: BinaryIO) -> int:
    return _S_U16.unpack(io.read(2))[0]  # a short read raises struct.error


def r_i32(io: BinaryIO) -> int:
    return _S_I32.unpack(io.read(4))[0]  # a short read raises struct.error


def r_u32(io: BinaryIO) -> int:
    return _S_U32.unpack(io.read(4))[0]  # a short read raises struct.error


def r_i64(io: BinaryIO) -> int:
    return _S_I64.unpack(io.read(8))[0]  # a short read raises struct.error


def r_f64(io: BinaryIO) -> float:
    return _S_F64.unpack(io.read(8))[0]  # a short read raises struct.error


def r_bool(io: BinaryIO) -> bool:
    return r_exact(io, 1) != b"\x00"


def r_uuid(io: BinaryIO) -> uuid.UUID:
    return uuid.UUID(bytes=r_exact(io, 16))


def r_uvarint(io: BinaryIO, max_bytes: int = 5) -> int:
    value = 0
    shift = 0
    for _ in range(max_bytes):
        b = io.read(1)
        if not b:
            raise WireError("varint truncated")
        byte = b[0]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            if max_bytes == 5 and value > 0xFFFFFFFF:
                raise WireError("varint exceeds 32 bits")
            return value
        shift += 7
    raise WireError(f"varint longer than {max_bytes} bytes")


def r_varint(io: BinaryIO) -> int:
    raw = r_uvarint(io, 5)
    return (raw >> 1) ^ -(raw & 1)


def r_varlong(io: BinaryIO) -> int:
    raw = r_uvarint(io, 10)
    if raw > 0xFFFFFFFFFFFFFFFF:
        raise WireError("varlong exceeds 64 bits")
    return (raw >> 1) ^ -(raw & 1)


def _utf8(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WireError(f"invalid UTF-8 in string: {exc.reason}") from None


def r_string(io: BinaryIO) -> str:
    n = _S_I16.unpack(io.read(2))[0]
    if n < 0:
        raise WireError("null where a string is required")
    data = io.read(n)
    if len(data) != n:
        raise WireError(f"needed {n} bytes, {len(data)} left")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WireError(f"invalid UTF-8 in string: {exc.reason}") from None


def r_nstring(io: BinaryIO) -> str | None:
    n = _S_I16.unpack(r_exact(io, 2))[0]
    if n < 0:
        if n != -1:
            raise WireError(f"negative string length {n}")
        return None
    return _utf8(r_exact(io, n))


def r_cstring(io: BinaryIO) -> str:
    b = io.read(1)
    n = b[0] if b and b[0] < 0x80 else (io.seek(-len(b), 1), r_uvarint(io))[1]
    if n == 0:
        raise WireError("null where a compact string is required")
    n -= 1
    data = io.read(n)
    if len(data) != n:
        raise WireError(f"needed {n} bytes, {len(data)} left")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WireError(f"invalid UTF-8 in string: {exc.reason}") from None


def r_ncstring(io: BinaryIO) -> str | None:
    n = r_uvarint(io)
    if n == 0:
        return None
    return _utf8(r_exact(io, n - 1))


def r_bytes(io: BinaryIO) -> bytes:
    n = _S_I32.unpack(r_exact(io, 4))[0]
    if n < 0:
        raise WireError("null where bytes are required")
    return r_exact(io, n)


def r_nbytes(io: BinaryIO) -> bytes | None:
    n = _S_I32.unpack(r_exact(io, 4))[0]
    if n < 0:
        if n != -1:
            raise WireError(f"negative bytes length {n}")
        return None
    return r_exact(io, n)


def r_cbytes(io: BinaryIO) -> bytes:
    n = r_uvarint(io)
    if n == 0:
        raise WireError("null where compact bytes are required")
    return r_exact(io, n - 1)


def r_ncbytes(io: BinaryIO) -> bytes | None:
    n = r_uvarint(io)
    if n == 0:
        return None
    return r_exact(io, n - 1)


def r_count(io: BinaryIO, nullable: bool, compact: bool) -> int:
    """Array element count; -1 means null. Counts are bounded by the bytes left (each element ≥ 1 byte)."""
    if compact:
        n = r_uvarint(io) - 1
    else:
        n = _S_I32.unpack(r_exact(io, 4))[0]
        if n < -1:
            raise WireError(f"negative array length {n}")
    if n == -1 and not nullable:
        raise WireError("null where an array is required")
    return n


def w_i8(io: BinaryIO, v: int) -> None:
    io.write(_S_I8.pack(v))


def w_i16(io: BinaryIO, v: int) -> None:
    io.write(_S_I16.pack(v))


def w_u16(io: BinaryIO, v: int) -> None:
    io.write(_S_U16.pack(v))


def w_i32(io: BinaryIO, v: int) -> None:
    io.write(_S_I32.pack(v))


def w_u32(io: BinaryIO, v: int) -> None:
    io.write(_S_U32.pack(v))


def w_i64(io: BinaryIO, v: int) -> None:
    io.write(_S_I64.pack(v))


def w_f64(io: BinaryIO, v: float) -> None:
    io.write(_S_F64.pack(v))


def w_bool(io: BinaryIO, v: bool) -> None:
    io.write(b"\x01" if v else b"\x00")


def w_uuid(io: BinaryIO, v: uuid.UUID) -> None:
    io.write(v.bytes)


def uvarint_bytes(value: int) -> bytes:
    if value < 0:
        raise EncodeError(f"unsigned varint cannot hold {value}")
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def w_uvarint(io: BinaryIO, v: int) -> None:
    io.write(uvarint_bytes(v))


def w_varint(io: BinaryIO, v: int) -> None:
    io.write(uvarint_bytes(((v << 1) ^ (v >> 31)) & 0xFFFFFFFF))


def w_varlong(io: BinaryIO, v: int) -> None:
    io.write(uvarint_bytes(((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF))


def w_string(io: BinaryIO, v: str) -> None:
    if v is None:
        raise EncodeError("null is not allowed for this string at this version")
    data = v.encode("utf-8")
    if len(data) > 0x7FFF:
        raise EncodeError(f"string of {len(data)} bytes exceeds 32767")
    io.write(_S_I16.pack(len(data)) + data)


def w_nstring(io: BinaryIO, v: str | None) -> None:
    if v is None:
        io.write(b"\xff\xff")
    else:
        w_string(io, v)


def w_cstring(io: BinaryIO, v: str) -> None:
    if v is None:
        raise EncodeError("null is not allowed for this string at this version")
    data = v.encode("utf-8")
    io.write(uvarint_bytes(len(data) + 1) + data)


def w_ncstring(io: BinaryIO, v: str | None) -> None:
    if v is None:
        io.write(b"\x00")
    else:
        w_cstring(io, v)


def w_bytes(io: BinaryIO, v: bytes) -> None:
    if v is None:
        raise EncodeError("null is not allowed for these bytes at this version")
    io.write(_S_I32.pack(len(v)))
    io.write(v)


def w_nbytes(io: BinaryIO, v: bytes | None) -> None:
    if v is None:
        io.write(b"\xff\xff\xff\xff")
    else:
        w_bytes(io, v)


def w_cbytes(io: BinaryIO, v: bytes) -> None:
    if v is None:
        raise EncodeError("null is not allowed for these bytes at this version")
    io.write(uvarint_bytes(len(v) + 1))
    io.write(v)


def w_ncbytes(io: BinaryIO, v: bytes | None) -> None:
    if v is None:
        io.write(b"\x00")
    else:
        w_cbytes(io, v)


def w_count(io: BinaryIO, n: int | None, nullable: bool, compact: bool) -> None:
    if n is None:
        if not nullable:
            raise EncodeError("null is not allowed for this array at this version")
        io.write(b"\x00" if compact else b"\xff\xff\xff\xff")
    elif compact:
        io.write(uvarint_bytes(n + 1))
    else:
        io.write(_S_I32.pack(n))


RUNTIME_IMPORT = (
    "from groupcoord.protocol.primitives import *\nfrom groupcoord.protocol.primitives import _utf8\n"
)


# --- construct classes ------------------------------------------------------------------------------------


class Scalar(Construct):
    """A leaf primitive: one reader and one writer function by name."""

    def __init__(self, name: str, reader: str, writer: str, default: Any) -> None:
        super().__init__()
        self.kafka_name = name
        self.reader = reader
        self.writer = writer
        self.default = default
        self._r = globals()[reader]
        self._w = globals()[writer]

    def _parse(self, stream: BinaryIO, context: Any, path: str) -> Any:
        return self._r(stream)

    def _build(self, obj: Any, stream: BinaryIO, context: Any, path: str) -> Any:
        self._w(stream, obj)
        return obj

    def _emitparse(self, code: Any) -> str:
        code.append(RUNTIME_IMPORT)
        return f"{self.reader}(io)"

    def _emitbuild(self, code: Any) -> str:
        code.append(RUNTIME_IMPORT)
        return f"({self.writer}(io, obj), obj)[1]"

    def __repr__(self) -> str:
        return f"<{self.kafka_name}>"


class Array(Construct):
    """Kafka array (int32 count, or unsigned varint count+1 when compact); parses to a tuple, None for null."""

    def __init__(self, subcon: Construct, nullable: bool, compact: bool) -> None:
        super().__init__()
        self.subcon = subcon
        self.nullable = nullable
        self.compact = compact

    def _parse(self, stream: BinaryIO, context: Any, path: str) -> Any:
        n = r_count(stream, self.nullable, self.compact)
        if n < 0:
            return None
        parse = self.subcon._parsereport
        return tuple(parse(stream, context, path) for _ in range(n))

    def _build(self, obj: Any, stream: BinaryIO, context: Any, path: str) -> Any:
        w_count(stream, None if obj is None else len(obj), self.nullable, self.compact)
        if obj:
            for item in obj:
                self.subcon._build(item, stream, context, path)
        return obj

    def _emitparse(self, code: Any) -> str:
        code.append(RUNTIME_IMPORT)
        fid = code.allocateId()
        code.append(f"""
            def parse_array_{fid}(io, this):
                n = r_count(io, {self.nullable}, {self.compact})
                if n < 0:
                    return None
                return tuple([{self.subcon._compileparse(code)} for _ in range(n)])
        """)
        return f"parse_array_{fid}(io, this)"

    def _emitbuild(self, code: Any) -> str:
        code.append(RUNTIME_IMPORT)
        fid = code.allocateId()
        code.append(f"""
            def build_array_{fid}(items, io, this):
                w_count(io, None if items is None else len(items), {self.nullable}, {self.compact})
                if items:
                    for obj in items:
                        {self.subcon._compilebuild(code)}
                return items
        """)
        return f"build_array_{fid}(obj, io, this)"


class NullableStruct(Construct):
    """A struct field Kafka declares nullable: an int8 marker (-1 null, 1 present), then the struct."""

    def __init__(self, subcon: Construct) -> None:
        super().__init__()
        self.subcon = subcon

    def _parse(self, stream: BinaryIO, context: Any, path: str) -> Any:
        marker = r_i8(stream)
        if marker < 0:
            return None
        return self.subcon._parsereport(stream, context, path)

    def _build(self, obj: Any, stream: BinaryIO, context: Any, path: str) -> Any:
        if obj is None:
            w_i8(stream, -1)
            return obj
        w_i8(stream, 1)
        self.subcon._build(obj, stream, context, path)
        return obj

    def _emitparse(self, code: Any) -> str:
        code.append(RUNTIME_IMPORT)
        fid = code.allocateId()
        code.append(f"""
            def parse_nstruct_{fid}(io, this):
                if r_i8(io) < 0:
                    return None
                return {self.subcon._compileparse(code)}
        """)
        return f"parse_nstruct_{fid}(io, this)"

    def _emitbuild(self, code: Any) -> str:
        code.append(RUNTIME_IMPORT)
        fid = code.allocateId()
        code.append(f"""
            def build_nstruct_{fid}(obj, io, this):
                if obj is None:
                    w_i8(io, -1)
                    return obj
                w_i8(io, 1)
                {self.subcon._compilebuild(code)}
                return obj
        """)
        return f"build_nstruct_{fid}(obj, io, this)"


def scalar(kind: str, compact: bool = False, nullable: bool = False) -> Scalar:
    """The construct for one Kafka primitive type name, in compact (flexible) form or not."""
    table: dict[str, tuple[str, str, Any]] = {
        "int8": ("r_i8", "w_i8", 0),
        "int16": ("r_i16", "w_i16", 0),
        "uint16": ("r_u16", "w_u16", 0),
        "int32": ("r_i32", "w_i32", 0),
        "uint32": ("r_u32", "w_u32", 0),
        "int64": ("r_i64", "w_i64", 0),
        "float64": ("r_f64", "w_f64", 0.0),
        "bool": ("r_bool", "w_bool", False),
        "uuid": ("r_uuid", "w_uuid", uuid.UUID(int=0)),
        "uvarint": ("r_uvarint", "w_uvarint", 0),
        "varint": ("r_varint", "w_varint", 0),
        "varlong": ("r_varlong", "w_varlong", 0),
    }
    if kind in table:
        r, w, d = table[kind]
        return Scalar(kind, r, w, d)
    if kind in ("string", "bytes", "records"):
        base = "string" if kind == "string" else "bytes"
        short = "string" if base == "string" else "bytes"
        prefix = ("n" if nullable else "") + ("c" if compact else "")
        name = f"{'nullable ' if nullable else ''}{'compact ' if compact else ''}{base}"
        default: Any = None if nullable else ("" if base == "string" else b"")
        return Scalar(name, f"r_{prefix}{short}", f"w_{prefix}{short}", default)
    raise ValueError(f"unknown Kafka type {kind!r}")
