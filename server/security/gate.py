"""The SASL authentication state of one connection on a SASL_PLAINTEXT or SASL_SSL listener.

As Kafka's SaslServerAuthenticator: before authentication only ApiVersions, SaslHandshake and then either
SaslAuthenticate requests (handshake v1, KIP-152) or raw size-framed tokens (handshake v0) are taken; any other
request closes the connection. An unknown mechanism is answered with UNSUPPORTED_SASL_MECHANISM and the
enabled list, a failed exchange with SASL_AUTHENTICATION_FAILED and a message (v0 raw tokens: a close), and
the connection is closed after either answer. As Kafka, both answers (and the close) wait
`connection.failed.authentication.delay.ms` on a timer, and a frame larger than `sasl.server.max.receive.size`
closes the connection before its body is read (the network layer checks `max_receive_size`). After
authentication every request goes to its handler (a second SaslHandshake or SaslAuthenticate is answered
ILLEGAL_SASL_STATE there).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import structlog

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.codec import decode_request, encode_response, peek
from groupcoord.protocol.errors import DecodeError, ErrorCode
from groupcoord.protocol.messages.sasl_authenticate import SaslAuthenticateResponse
from groupcoord.protocol.messages.sasl_handshake import SaslHandshakeResponse
from groupcoord.server.net.dispatch import PASS
from groupcoord.server.security.plain import PlainError
from groupcoord.server.security.plain import authenticate as plain_authenticate
from groupcoord.server.security.scram import MECHANISMS as SCRAM_MECHANISMS
from groupcoord.server.security.scram import ScramCredential, ScramError, ScramExchange

log = structlog.get_logger("groupcoord.security")


class GatedPeer(Protocol):
    """What the gate uses of a connection (`server.net.network.Connection`)."""

    peer_host: str
    peer_port: int
    principal: str

    def write(self, data: bytes) -> None: ...

    def close(self, reason: str) -> None: ...

    def close_after(self, delay_s: float, reason: str, reply: bytes | None = None) -> None: ...


class SaslGate:
    def __init__(
        self,
        mechanisms: tuple[str, ...],
        plain_users: dict[str, str],
        scram_lookup: Callable[[str, str], ScramCredential | None],
        max_receive_size: int = 524288,
        failure_delay_ms: int = 100,
        fake_salt_key: bytes = b"",
    ) -> None:
        #: Kafka's sasl.server.max.receive.size: the network layer closes on a larger frame before auth
        self.max_receive_size = max_receive_size
        #: Kafka's connection.failed.authentication.delay.ms: how long a failure answer (and close) waits
        self.failure_delay_s = failure_delay_ms / 1000
        self.fake_salt_key = fake_salt_key
        self.mechanisms = mechanisms
        self.plain_users = plain_users
        self.scram_lookup = scram_lookup
        self.authenticated = False
        self.state = "handshake"  # handshake -> authenticate (v1) | raw (v0) -> done
        self.mechanism = ""
        self._scram: ScramExchange | None = None

    def receive(self, conn: GatedPeer, frame: bytes) -> object:
        """The reply frame, None (closed or answered), or `PASS` for the dispatcher (ApiVersions)."""
        if self.state == "raw":
            return self._raw_token(conn, frame)
        try:
            api_key, version, correlation_id = peek(frame)
        except DecodeError as exc:
            conn.close(f"SASL: {exc}")
            return None
        if api_key == ApiKey.API_VERSIONS and self.state == "handshake":
            return PASS
        if api_key == ApiKey.SASL_HANDSHAKE and self.state == "handshake" and version <= 1:
            return self._handshake(conn, frame, version, correlation_id)
        if api_key == ApiKey.SASL_AUTHENTICATE and self.state == "authenticate" and version <= 2:
            return self._authenticate(conn, frame, version, correlation_id)
        conn.close(f"unexpected request (API {api_key} v{version}) before SASL authentication completed")
        return None

    def _handshake(self, conn: GatedPeer, frame: bytes, version: int, correlation_id: int) -> object:
        try:
            _, req = decode_request(frame)
        except DecodeError as exc:
            conn.close(f"SASL handshake: {exc}")
            return None
        if req.mechanism not in self.mechanisms:
            body = SaslHandshakeResponse(
                error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=self.mechanisms
            )
            reply = encode_response(correlation_id, ApiKey.SASL_HANDSHAKE, version, body)
            conn.close_after(self.failure_delay_s, f"unsupported SASL mechanism {req.mechanism!r}", reply)
            return None
        self.mechanism = req.mechanism
        if req.mechanism in SCRAM_MECHANISMS:
            self._scram = ScramExchange(req.mechanism, self.scram_lookup, self.fake_salt_key)
        self.state = "authenticate" if version >= 1 else "raw"
        body = SaslHandshakeResponse(error_code=ErrorCode.NONE, mechanisms=self.mechanisms)
        return encode_response(correlation_id, ApiKey.SASL_HANDSHAKE, version, body)

    def _evaluate(self, token: bytes) -> tuple[bytes, str | None]:
        """(challenge, authenticated user or None while the exchange goes on); raises on failure."""
        if self._scram is not None:
            challenge = self._scram.evaluate(token)
            return challenge, self._scram.username if self._scram.complete else None
        return b"", plain_authenticate(token, self.plain_users)

    def _authenticate(self, conn: GatedPeer, frame: bytes, version: int, correlation_id: int) -> object:
        try:
            _, req = decode_request(frame)
        except DecodeError as exc:
            conn.close(f"SASL authenticate: {exc}")
            return None
        try:
            challenge, user = self._evaluate(req.auth_bytes)
        except (ScramError, PlainError) as exc:
            log.info(
                "SASL authentication failed", mechanism=self.mechanism, peer=conn.peer_host, reason=str(exc)
            )
            told = exc.client_message(self.mechanism) if isinstance(exc, ScramError) else str(exc)
            body = SaslAuthenticateResponse(
                error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=told, auth_bytes=b""
            )
            reply = encode_response(correlation_id, ApiKey.SASL_AUTHENTICATE, version, body)
            conn.close_after(self.failure_delay_s, "SASL authentication failed", reply)
            return None
        if user is not None:
            self._done(conn, user)
        body = SaslAuthenticateResponse(error_code=ErrorCode.NONE, error_message=None, auth_bytes=challenge)
        return encode_response(correlation_id, ApiKey.SASL_AUTHENTICATE, version, body)

    def _raw_token(self, conn: GatedPeer, token: bytes) -> object:
        try:
            challenge, user = self._evaluate(token)
        except (ScramError, PlainError) as exc:
            log.info(
                "SASL authentication failed", mechanism=self.mechanism, peer=conn.peer_host, reason=str(exc)
            )
            conn.close("SASL authentication failed")
            return None
        if user is not None:
            self._done(conn, user)
        return len(challenge).to_bytes(4, "big") + challenge

    def _done(self, conn: GatedPeer, user: str) -> None:
        self.authenticated = True
        self.state = "done"
        conn.principal = "User:" + user
        log.info(
            "SASL authenticated", mechanism=self.mechanism, principal=conn.principal, peer=conn.peer_host
        )
