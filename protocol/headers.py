"""Request header v0-v2 and response header v0-v1.

Request header v1 is used for non-flexible API versions, v2 (v1 plus tagged fields) for flexible ones; v2
keeps ClientId a classic int16-length string. Response header v1 adds tagged fields for flexible versions,
except that ApiVersions responses always use header v0 (a client must read it before it knows our versions).
"""

from __future__ import annotations

from groupcoord.protocol.schema import INT16, INT32, STRING, f, message


@message(-1, "header", valid="0-2", flexible="2+")
class RequestHeader:
    request_api_key: int = f(INT16, "0+")
    request_api_version: int = f(INT16, "0+")
    correlation_id: int = f(INT32, "0+")
    client_id: str | None = f(STRING, "1+", nullable="1+", default="", flexible=False)


@message(-1, "header", valid="0-1", flexible="1+")
class ResponseHeader:
    correlation_id: int = f(INT32, "0+")
