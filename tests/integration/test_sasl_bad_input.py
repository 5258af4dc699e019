"""Raw-socket SASL abuse on a SASL_PLAINTEXT listener (issue 18): requests before authentication, unknown
mechanisms, wrong passwords, garbage and truncated tokens and a replayed SCRAM client-final are all refused
with Kafka's error code (or a close) and the server keeps serving."""

from __future__ import annotations

import struct

import pytest

from groupcoord.protocol.codec import encode_request
from groupcoord.protocol.messages.api_versions import ApiVersionsRequest
from groupcoord.protocol.messages.metadata import MetadataRequest
from groupcoord.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from groupcoord.protocol.messages.sasl_handshake import SaslHandshakeRequest
from tests.integration.helpers import RawClient
from tests.integration.security_fixture import (
    PLAIN_PASSWORD,
    PLAIN_USER,
    SCRAM_PASSWORD,
    SecureServer,
    authenticate,
    handshake,
    scram_login,
    start_secure_server,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]
SASL_AUTHENTICATION_FAILED, UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE = 58, 33, 34


@pytest.fixture(scope="module")
def secure(tmp_path_factory):  # type: ignore[no-untyped-def]
    s = start_secure_server(tmp_path_factory.mktemp("sasl"))
    yield s
    s.srv.kill()


def test_a_request_before_authentication_closes_the_connection(secure: SecureServer) -> None:
    c = RawClient("127.0.0.1", secure.sasl_plain)
    assert (
        c.request(18, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1")).error_code
        == 0
    )
    c.send_raw(encode_request(3, 12, 2, MetadataRequest(topics=None)))
    assert c.is_closed_by_server()


def test_an_unknown_mechanism_gets_the_enabled_list_and_a_close(secure: SecureServer) -> None:
    c = RawClient("127.0.0.1", secure.sasl_plain)
    resp = c.request(17, 1, SaslHandshakeRequest(mechanism="GSSAPI"))
    assert resp.error_code == UNSUPPORTED_SASL_MECHANISM
    assert set(resp.mechanisms) == {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}
    assert c.is_closed_by_server()


@pytest.mark.parametrize(
    ("mechanism", "token"),
    [
        ("PLAIN", f"\x00{PLAIN_USER}\x00wrong".encode()),
        ("PLAIN", b"\x00only-two"),
        ("PLAIN", f"mallory\x00{PLAIN_USER}\x00{PLAIN_PASSWORD}".encode()),
        ("SCRAM-SHA-256", b"\xff\xfe garbage"),
        ("SCRAM-SHA-256", b"n,,n=no=body,r=abc"),
        ("SCRAM-SHA-256", b"n,,n=alice"),
        ("SCRAM-SHA-256", b""),
    ],
)
def test_bad_tokens_get_sasl_authentication_failed_and_a_close(
    secure: SecureServer, mechanism: str, token: bytes
) -> None:
    c = handshake(secure.sasl_plain, mechanism)
    resp = authenticate(c, token)
    assert resp.error_code == SASL_AUTHENTICATION_FAILED and resp.error_message
    assert c.is_closed_by_server()


def test_a_wrong_scram_password_is_refused(secure: SecureServer) -> None:
    c, _, resp = scram_login(secure.sasl_plain, "not-" + SCRAM_PASSWORD)
    assert resp.error_code == SASL_AUTHENTICATION_FAILED
    assert c.is_closed_by_server()


def test_a_replayed_scram_client_final_is_refused(secure: SecureServer) -> None:
    good, final, resp = scram_login(secure.sasl_plain, SCRAM_PASSWORD)
    assert resp.error_code == 0 and resp.auth_bytes.startswith(b"v=")
    # the same client-first on a new connection gets a fresh server nonce: the captured final no longer fits
    c = handshake(secure.sasl_plain, "SCRAM-SHA-256")
    assert authenticate(c, b"n,,n=alice,r=fyko+d2lbbFgONRv9qkxdawL").error_code == 0
    assert authenticate(c, final).error_code == SASL_AUTHENTICATION_FAILED
    assert c.is_closed_by_server()
    # and on the authenticated connection a second exchange is out of place
    assert authenticate(good, final).error_code == ILLEGAL_SASL_STATE
    assert good.request(3, 12, MetadataRequest(topics=None)).brokers


def test_a_truncated_sasl_authenticate_frame_closes_the_connection(secure: SecureServer) -> None:
    c = handshake(secure.sasl_plain, "SCRAM-SHA-256")
    frame = encode_request(36, 1, 2, SaslAuthenticateRequest(auth_bytes=b"n,,n=alice,r=abcdef"))
    body = frame[4:-6]  # the auth bytes' length says more than the frame holds
    c.send_raw(struct.pack(">i", len(body)) + body)
    assert c.is_closed_by_server()


def test_the_server_still_authenticates_after_all_that(secure: SecureServer) -> None:
    _, _, resp = scram_login(secure.sasl_plain, SCRAM_PASSWORD, nonce="another-nonce")
    assert resp.error_code == 0
    assert secure.srv.alive()
