"""Hand-written decoders for the hottest request, Heartbeat, beside the declared codec (which stays the
schema's source and the decoder of everything else).

A Heartbeat is ~60 bytes of four fields; going through the general codec (a stream, the compiled construct
parser, two dataclasses) costs several times the work of reading them with `struct`. These functions read
the common shape only: lengths that fit one varint byte, no tagged fields, nothing after the last field,
valid UTF-8. Anything else returns None and the request takes the general path, so the two can never
disagree on a frame both accept (tests/protocol/test_fast.py checks them against each other on generated
requests of every version).

`frame` is a request frame without its size prefix, as the dispatcher gets it.
"""

from __future__ import annotations

import struct

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")

#: (group_id, generation_id, member_id, group_instance_id)
HeartbeatFields = tuple[str, int, str, str | None]


def _body_start(frame: bytes, flexible: bool) -> int:
    """Where the body starts after a request header v1 (v2 when flexible: plus an empty tag section)."""
    n: int = _I16.unpack_from(frame, 8)[0]
    if n < -1:
        return -1
    pos = 10 + max(n, 0)
    if flexible:
        if len(frame) <= pos or frame[pos] != 0:
            return -1
        pos += 1
    return pos


def parse_heartbeat(frame: bytes, version: int) -> HeartbeatFields | None:
    """The fields of a Heartbeat request of `version` (0-4), or None for the general decoder to handle."""
    try:
        if version < 4:
            pos = _body_start(frame, False)
            if pos < 0:
                return None
            n = _I16.unpack_from(frame, pos)[0]
            if n < 0:
                return None
            pos += 2
            group_id = frame[pos : pos + n].decode()
            pos += n
            generation = _I32.unpack_from(frame, pos)[0]
            pos += 4
            n = _I16.unpack_from(frame, pos)[0]
            if n < 0:
                return None
            pos += 2
            member_id = frame[pos : pos + n].decode()
            pos += n
            instance_id = None
            if version == 3:
                n = _I16.unpack_from(frame, pos)[0]
                pos += 2
                if n >= 0:
                    instance_id = frame[pos : pos + n].decode()
                    pos += n
                elif n != -1:
                    return None
        else:
            pos = _body_start(frame, True)
            if pos < 0:
                return None
            n = frame[pos] - 1  # compact string: uvarint(length + 1), one byte up to 126
            if n < 0 or n > 126:
                return None
            pos += 1
            group_id = frame[pos : pos + n].decode()
            pos += n
            generation = _I32.unpack_from(frame, pos)[0]
            pos += 4
            n = frame[pos] - 1
            if n < 0 or n > 126:
                return None
            pos += 1
            member_id = frame[pos : pos + n].decode()
            pos += n
            n = frame[pos] - 1
            pos += 1
            instance_id = None
            if n >= 0:
                if n > 126:
                    return None
                instance_id = frame[pos : pos + n].decode()
                pos += n
            if frame[pos] != 0:  # tagged fields: the general path reads them
                return None
            pos += 1
        if pos != len(
            frame
        ):  # short (a string ran past the end) or trailing bytes: the general path counts them
            return None
        return group_id, generation, member_id, instance_id
    except (struct.error, IndexError, UnicodeDecodeError):
        return None
