"""Kafka's limits on unauthenticated SASL peers (issue 30), against the real server over raw sockets:

- `sasl.server.max.receive.size`: before authentication a frame larger than it closes the connection on its
  size prefix alone (the body is never sent here, so only a check of the prefix can close it in time);
- `connection.failed.authentication.delay.ms`: a failed authentication is answered no sooner than the delay,
  and another connection is served in the meantime (a timer, not a stalled server);
- a SCRAM failure reads the same for an unknown user as for a wrong password: a plausible server-first for
  both, then the same error code and message at the proof.
"""

from __future__ import annotations

import base64
import select
import struct
import time

import pytest

from groupcoord.protocol.codec import decode_response, encode_request
from groupcoord.protocol.messages.api_versions import ApiVersionsRequest
from groupcoord.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from groupcoord.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from groupcoord.protocol.messages.sasl_handshake import SaslHandshakeRequest
from tests.integration.helpers import RawClient, wait_for_sync
from tests.integration.security_fixture import (
    PLAIN_PASSWORD,
    PLAIN_USER,
    SCRAM_PASSWORD,
    SecureServer,
    authenticate,
    handshake,
    scram_client_final,
    start_secure_server,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
SASL_AUTHENTICATION_FAILED, UNSUPPORTED_SASL_MECHANISM = 58, 33
DELAY_MS = 4000
MAX_RECEIVE = 524288  # Kafka's default sasl.server.max.receive.size


@pytest.fixture(scope="module")
def secure(tmp_path_factory):  # type: ignore[no-untyped-def]
    s = start_secure_server(
        tmp_path_factory.mktemp("sasl-limits"), "--connection-failed-authentication-delay-ms", str(DELAY_MS)
    )
    yield s
    s.srv.kill()


def plain_login(port: int) -> RawClient:
    c = handshake(port, "PLAIN")
    assert authenticate(c, f"\x00{PLAIN_USER}\x00{PLAIN_PASSWORD}".encode()).error_code == 0
    return c


# -- sasl.server.max.receive.size


def test_a_frame_over_the_sasl_receive_limit_closes_an_unauthenticated_connection(
    secure: SecureServer,
) -> None:
    c = RawClient("127.0.0.1", secure.sasl_plain)
    # only the size prefix: a server that waited for the body would hold the connection open (30 s frame
    # timeout); Kafka judges the prefix and closes at once
    c.send_raw(struct.pack(">i", MAX_RECEIVE + 1))
    assert c.is_closed_by_server(timeout=15)
    wait_for_sync(
        lambda: "sasl.server.max.receive.size" in secure.srv.log_path.read_text(errors="replace"),
        30,
        "the close to be logged",
    )
    # after the handshake, too: the limit holds until authentication completes
    c = handshake(secure.sasl_plain, "PLAIN")
    c.send_raw(struct.pack(">i", 10 * MAX_RECEIVE))
    assert c.is_closed_by_server(timeout=15)


def test_a_frame_of_exactly_the_limit_is_read_and_answered(secure: SecureServer) -> None:
    c = handshake(secure.sasl_plain, "PLAIN")
    token = f"\x00{PLAIN_USER}\x00".encode()
    empty = encode_request(36, 1, 7, SaslAuthenticateRequest(auth_bytes=token))
    token += b"x" * (MAX_RECEIVE - (len(empty) - 4))  # a (wrong) password that fills the frame to the limit
    frame = encode_request(36, 1, 7, SaslAuthenticateRequest(auth_bytes=token))
    assert len(frame) - 4 == MAX_RECEIVE
    c.send_raw(frame)
    c.sock.settimeout(60)
    _, resp = decode_response(c.read_frame(), 36, 1)
    assert resp.error_code == SASL_AUTHENTICATION_FAILED  # the whole frame was read and judged


def test_after_authentication_the_request_limit_is_socket_request_max_bytes(secure: SecureServer) -> None:
    c = plain_login(secure.sasl_plain)
    names = tuple(MetadataRequestTopic(name=f"no-such-topic-{i:012d}") for i in range(20000))
    request = MetadataRequest(topics=names, allow_auto_topic_creation=False)
    assert len(encode_request(3, 12, 1, request)) > MAX_RECEIVE + 4
    resp = c.request(3, 12, request)
    assert len(resp.topics) == len(names)


# -- connection.failed.authentication.delay.ms


def test_a_failed_authentication_is_answered_after_the_delay_while_others_are_served(
    secure: SecureServer,
) -> None:
    bad = handshake(secure.sasl_plain, "PLAIN")
    sent = time.monotonic()
    bad.send_raw(
        encode_request(36, 2, 99, SaslAuthenticateRequest(auth_bytes=f"\x00{PLAIN_USER}\x00wrong".encode()))
    )
    # meanwhile a second client logs in and is answered
    good = plain_login(secure.sasl_plain)
    versions = good.request(18, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    assert versions.error_code == 0
    # ... while the failed one still waits (a server that slept through the delay would have answered it
    # before it read the second client's first request)
    assert not select.select([bad.sock], [], [], 0)[0]
    bad.sock.settimeout(60)
    _, resp = decode_response(bad.read_frame(), 36, 2)
    answered = time.monotonic()
    assert resp.error_code == SASL_AUTHENTICATION_FAILED
    assert answered - sent >= DELAY_MS / 1000 * 0.95  # no sooner than the delay (a monotonic-clock margin)
    assert bad.is_closed_by_server(timeout=15)


def test_nothing_is_answered_during_the_delay_and_an_unknown_mechanism_waits_too(
    secure: SecureServer,
) -> None:
    c = RawClient("127.0.0.1", secure.sasl_plain)
    sent = time.monotonic()
    c.send_raw(encode_request(17, 1, 5, SaslHandshakeRequest(mechanism="GSSAPI")))
    # more requests queued behind the failure are not read: the answer is the handshake's, then a close
    c.send_raw(
        encode_request(18, 3, 6, ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    )
    readable, _, _ = select.select([c.sock], [], [], DELAY_MS / 1000 / 2)
    assert not readable
    c.sock.settimeout(60)
    correlation, resp = decode_response(c.read_frame(), 17, 1)
    assert time.monotonic() - sent >= DELAY_MS / 1000 * 0.95
    assert (correlation, resp.error_code) == (5, UNSUPPORTED_SASL_MECHANISM)
    assert c.is_closed_by_server(timeout=15)


# -- SCRAM: an unknown user reads as a wrong password


def _scram_attempt(port: int, user: str, password: str) -> tuple[dict[str, str], int, str | None]:
    """(server-first attributes, error code and message of the answer to the client-final)."""
    c = handshake(port, "SCRAM-SHA-256")
    bare = f"n={user},r=clientnonce123"
    first = authenticate(c, f"n,,{bare}".encode())
    assert first.error_code == 0, first.error_message
    attrs = dict(kv.split("=", 1) for kv in first.auth_bytes.decode().split(","))
    c.sock.settimeout(60)
    final = authenticate(c, scram_client_final(first.auth_bytes, bare, password))
    assert c.is_closed_by_server(timeout=15)
    return attrs, final.error_code, final.error_message


def test_an_unknown_scram_user_fails_exactly_like_a_wrong_password(secure: SecureServer) -> None:
    known, known_code, known_message = _scram_attempt(secure.sasl_plain, "alice", "not-" + SCRAM_PASSWORD)
    unknown, unknown_code, unknown_message = _scram_attempt(secure.sasl_plain, "nobody", SCRAM_PASSWORD)
    assert known_code == unknown_code == SASL_AUTHENTICATION_FAILED
    assert unknown_message == known_message
    assert known_message == (
        "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
    )
    # the unknown user's server-first looks like a real one: the client's nonce extended, a salt of the same
    # size, the default iteration count
    assert unknown["r"].startswith("clientnonce123") and len(unknown["r"]) > len("clientnonce123")
    assert len(base64.b64decode(unknown["s"])) == len(base64.b64decode(known["s"]))
    assert unknown["i"] == known["i"] == "4096"
    # and it is stable, as a stored salt is: asking twice does not give the name away
    again, _, _ = _scram_attempt(secure.sasl_plain, "nobody", "anything")
    assert again["s"] == unknown["s"]
    assert _scram_attempt(secure.sasl_plain, "nobody-else", "x")[0]["s"] != unknown["s"]
