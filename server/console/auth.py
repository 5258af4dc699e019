"""Who is looking: HTTP basic credentials checked against the server's own SASL users, and what they may see.

When the server authenticates Kafka clients (a SASL listener, or an SSL listener requiring client
certificates), the console asks for HTTP basic credentials of the server's users: a PLAIN user from the JAAS
config or a SCRAM user (the password is checked against the stored salted keys as a
SCRAM exchange would: StoredKey = H(HMAC(Hi(password, salt, i), "Client Key"))). The principal is
`User:<name>`, as on a Kafka connection, and the ACLs decide what it may DESCRIBE: groups, topics and
transactional ids it may not describe are left out of every page, as Kafka's list APIs leave them out.

A PBKDF2 check costs milliseconds, so good credentials are remembered (a digest of them, for a minute) and a
failed check answers only after `failed_delay_ms`, Kafka's `connection.failed.authentication.delay.ms`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from groupcoord.server.console.views import Visible
from groupcoord.server.security import authorizer as acl
from groupcoord.server.security.scram import MECHANISMS

if TYPE_CHECKING:
    from groupcoord.server.security import Security

REMEMBER_S = 60.0
_RESOURCE = {"group": acl.GROUP, "topic": acl.TOPIC, "transactional_id": acl.TRANSACTIONAL_ID}


@dataclass(frozen=True)
class Viewer:
    principal: str
    host: str


class ConsoleAuth:
    """`required` when a listener speaks SASL; `check(header)` returns the principal or None."""

    def __init__(self, security: Security | None, authenticated_listeners: bool) -> None:
        self.security = security
        #: a listener authenticates its clients (SASL, or TLS client certificates): the console asks too
        self.required = security is not None and authenticated_listeners
        self._known: dict[bytes, tuple[str, float]] = {}

    def check(self, authorization: str | None) -> str | None:
        if not self.required:
            return "User:ANONYMOUS"
        if not authorization or not authorization.lower().startswith("basic "):
            return None
        try:
            raw = base64.b64decode(authorization[6:].strip(), validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return None
        user, sep, password = raw.partition(":")
        if not sep or not user:
            return None
        key = hashlib.sha256(raw.encode()).digest()
        known = self._known.get(key)
        if known is not None and known[1] > time.monotonic():
            return known[0]
        if not self._verify(user, password):
            return None
        principal = f"User:{user}"
        if len(self._known) > 1000:
            self._known.clear()
        self._known[key] = (principal, time.monotonic() + REMEMBER_S)
        return principal

    def _verify(self, user: str, password: str) -> bool:
        sec = self.security
        assert sec is not None
        expected = sec.plain_users.get(user)
        ok = expected is not None and hmac.compare_digest(expected.encode(), password.encode())
        for mech, algo in MECHANISMS.items():
            if ok:
                break
            cred = sec.scram_credential(user, mech)
            if cred is None:
                continue
            salted = hashlib.pbkdf2_hmac(algo, password.encode(), cred.salt, cred.iterations)
            client_key = hmac.new(salted, b"Client Key", algo).digest()
            ok = hmac.compare_digest(hashlib.new(algo, client_key).digest(), cred.stored_key)
        return ok

    def visible(self, viewer: Viewer) -> Visible | None:
        """The `views.Visible` filter for this viewer."""
        sec = self.security
        if sec is None or not sec.enabled:
            return None

        def may_describe(kind: str, name: str) -> bool:
            return sec.authorize(viewer.principal, viewer.host, acl.DESCRIBE, _RESOURCE[kind], name)

        return may_describe
