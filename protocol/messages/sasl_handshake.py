"""SaslHandshake (API key 17), versions 0-1, never flexible.

Version notes: v0 is followed by raw SASL tokens (size-framed, no request header); v1 (KIP-152) by
SaslAuthenticate requests. The answer lists the mechanisms the listener enables.
"""

from __future__ import annotations

from groupcoord.protocol.schema import INT16, STRING, array, f, message


@message(17, "request", valid="0-1", flexible="none")
class SaslHandshakeRequest:
    mechanism: str = f(STRING, "0+")


@message(17, "response", valid="0-1", flexible="none")
class SaslHandshakeResponse:
    error_code: int = f(INT16, "0+")
    mechanisms: tuple[str, ...] = f(array(STRING), "0+")
