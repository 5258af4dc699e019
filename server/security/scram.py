"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka's ScramSaslServer speaks them.

Only salted credentials are kept (salt, StoredKey, ServerKey, iterations: Kafka's `ScramCredential`), never
passwords. The primitives are the standard library's: `hashlib.pbkdf2_hmac` (Hi), `hmac` (HMAC) and
`hmac.compare_digest` for the proof check.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass

MECHANISMS = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
#: Kafka's `ScramMechanism` ids (DescribeUserScramCredentials) and iteration bounds
MECHANISM_IDS = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384


#: what the client is told for every failure but the few Kafka names (its SaslServerAuthenticator sends this
#: for any SaslException, so that the answer does not say whether the user exists)
INVALID_CREDENTIALS = (
    "Authentication failed during authentication due to invalid credentials with SASL mechanism "
)


class ScramError(Exception):
    """The exchange failed. The message is for the log; the client sees it only when `public` (Kafka's
    SaslAuthenticationException), else `INVALID_CREDENTIALS` + mechanism (`client_message`)."""

    def __init__(self, message: str, public: bool = False) -> None:
        super().__init__(message)
        self.public = public

    def client_message(self, mechanism: str) -> str:
        return str(self) if self.public else INVALID_CREDENTIALS + mechanism


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def to_json(self) -> dict[str, object]:
        b64 = base64.b64encode
        return {
            "salt": b64(self.salt).decode(),
            "stored_key": b64(self.stored_key).decode(),
            "server_key": b64(self.server_key).decode(),
            "iterations": self.iterations,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> ScramCredential:
        d = base64.b64decode
        return cls(
            d(str(data["salt"])),
            d(str(data["stored_key"])),
            d(str(data["server_key"])),
            int(data["iterations"]),  # type: ignore[call-overload]
        )


def credential_from_salted(
    mechanism: str, salted_password: bytes, salt: bytes, iterations: int
) -> ScramCredential:
    """What AlterUserScramCredentials carries (the salted password): keys derived as RFC 5802 says."""
    algo = MECHANISMS[mechanism]
    client_key = hmac.new(salted_password, b"Client Key", algo).digest()
    server_key = hmac.new(salted_password, b"Server Key", algo).digest()
    return ScramCredential(salt, hashlib.new(algo, client_key).digest(), server_key, iterations)


def new_credential(mechanism: str, password: str, iterations: int = MIN_ITERATIONS) -> ScramCredential:
    salt = secrets.token_bytes(32)
    salted = hashlib.pbkdf2_hmac(MECHANISMS[mechanism], password.encode(), salt, iterations)
    return credential_from_salted(mechanism, salted, salt, iterations)


def _attributes(message: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise ScramError(f"Invalid SCRAM message: {message[:64]!r}")
        out[key] = value
    return out


def _username(raw: str) -> str:
    """RFC 5802 names escape ',' and '=' as =2C and =3D; any other '=' is malformed."""
    if "=" in raw.replace("=2C", "").replace("=3D", ""):
        raise ScramError("Invalid username encoding")
    return raw.replace("=2C", ",").replace("=3D", "=")


class ScramExchange:
    """One server side of a SCRAM exchange: client-first -> server-first, client-final -> server-final.

    `lookup(user, mechanism)` gives the stored credential or None. A fresh server nonce per exchange makes a
    replayed client-final (from another connection) fail the nonce check.
    """

    def __init__(self, mechanism: str, lookup, fake_salt_key: bytes = b"") -> None:  # type: ignore[no-untyped-def]
        self.mechanism = mechanism
        self.fake_salt_key = fake_salt_key
        self.algo = MECHANISMS[mechanism]
        self.lookup = lookup
        self.state = "first"
        self.username = ""
        self._gs2 = ""
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self._cred: ScramCredential | None = None
        self._stand_in_used = False  # the user is unknown: the proof can never pass

    @property
    def complete(self) -> bool:
        return self.state == "done"

    def evaluate(self, token: bytes) -> bytes:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise ScramError("Invalid SCRAM message: not UTF-8") from None
        if self.state == "first":
            return self._first(text)
        if self.state == "final":
            return self._final(text)
        raise ScramError("Unexpected SASL token after SCRAM authentication completed")

    def _first(self, text: str) -> bytes:
        # gs2-header: "n,," or "n,a=authzid," (no channel binding: "y"/"p" are refused as Kafka does)
        parts = text.split(",", 2)
        if len(parts) != 3 or parts[0] != "n":
            raise ScramError("Invalid SCRAM client first message")
        authzid = parts[1]
        bare = parts[2]
        fields = bare.split(",")  # n=user,r=nonce[,extensions] (Kafka's tokenauth=true among them)
        if (
            len(fields) < 2
            or not fields[0].startswith("n=")
            or not fields[1].startswith("r=")
            or len(fields[1]) < 3
        ):
            raise ScramError("Invalid SCRAM client first message")
        if any(ext.partition("=")[0] == "tokenauth" for ext in fields[2:]):
            raise ScramError("Authentication failed: delegation tokens are not supported", public=True)
        attrs = {"r": fields[1][2:]}
        self.username = _username(fields[0][2:])
        self._cred = self.lookup(self.username, self.mechanism)
        if self._cred is None:
            # no early exit for an unknown user: a stand-in credential answers a plausible server-first and
            # the exchange fails at the proof, as for a wrong password (Kafka fails here; docs/differences.md)
            self._cred = self._stand_in()
            self._stand_in_used = True
        if authzid and (not authzid.startswith("a=") or _username(authzid[2:]) != self.username):
            raise ScramError(
                "Authentication failed: Client requested an authorization id that is different from username",
                public=True,
            )
        self._gs2 = parts[0] + "," + authzid + ","
        self._client_first_bare = bare
        self._nonce = attrs["r"] + secrets.token_urlsafe(24)
        salt = base64.b64encode(self._cred.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={self._cred.iterations}"
        self.state = "final"
        return self._server_first.encode()

    def _stand_in(self) -> ScramCredential:
        """A credential no password matches, with a salt that is the same on every attempt for one name (a
        keyed hash of it: a fresh random salt per attempt would tell an unknown user from a real one)."""
        key = self.fake_salt_key or b"groupcoord"
        salt = hmac.new(key, f"{self.mechanism}\0{self.username}".encode(), "sha256").digest()
        size = hashlib.new(self.algo).digest_size
        return ScramCredential(salt, secrets.token_bytes(size), secrets.token_bytes(size), MIN_ITERATIONS)

    def _final(self, text: str) -> bytes:
        self.state = "failed"
        without_proof, sep, proof_part = text.rpartition(",p=")
        if not sep:
            raise ScramError("Invalid SCRAM client final message")
        attrs = _attributes(without_proof)
        expected_binding = base64.b64encode(self._gs2.encode()).decode()
        if attrs.get("c") != expected_binding or attrs.get("r") != self._nonce:
            raise ScramError("Invalid client nonce or channel binding in the final client message")
        try:
            proof = base64.b64decode(proof_part, validate=True)
        except ValueError:
            raise ScramError("Invalid SCRAM client final message") from None
        cred = self._cred
        assert cred is not None
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = hmac.new(cred.stored_key, auth_message, self.algo).digest()
        if len(proof) != len(signature):
            raise ScramError("Invalid client proof")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        matches = hmac.compare_digest(hashlib.new(self.algo, client_key).digest(), cred.stored_key)
        if self._stand_in_used:  # the log says why (as Kafka's does); the client is told no more than usual
            raise ScramError(
                f"Invalid user credentials: no {self.mechanism} credential for {self.username!r}"
            )
        if not matches:
            raise ScramError("Invalid client proof")
        server_signature = hmac.new(cred.server_key, auth_message, self.algo).digest()
        self.state = "done"
        return b"v=" + base64.b64encode(server_signature)
