"""SaslAuthenticate (API key 36), versions 0-2, flexible from v2.

Version notes: v1 response SessionLifetimeMs (KIP-368 re-authentication); v2 flexible encoding.
"""

from __future__ import annotations

from groupcoord.protocol.schema import BYTES, INT16, INT64, STRING, f, message


@message(36, "request", valid="0-2", flexible="2+")
class SaslAuthenticateRequest:
    auth_bytes: bytes = f(BYTES, "0+")


@message(36, "response", valid="0-2", flexible="2+")
class SaslAuthenticateResponse:
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+")
    auth_bytes: bytes = f(BYTES, "0+")
    session_lifetime_ms: int = f(INT64, "1+", default=0, ignorable=True)
