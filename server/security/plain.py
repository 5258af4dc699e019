"""SASL PLAIN (RFC 4616) as Kafka's PlainSaslServer: `[authzid] NUL authcid NUL passwd`, users from the JAAS
config's `user_<name>="<password>"` options (PlainLoginModule), passwords compared in constant time."""

from __future__ import annotations

import hmac
import re

_JAAS_USER = re.compile(r'user_([^=\s]+)\s*=\s*"((?:[^"\\]|\\.)*)"')


class PlainError(Exception):
    pass


def users_from_jaas(jaas: str) -> dict[str, str]:
    """`org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="secret";` -> users."""
    return {m.group(1): m.group(2).replace('\\"', '"') for m in _JAAS_USER.finditer(jaas)}


def authenticate(token: bytes, users: dict[str, str]) -> str:
    """The authenticated user name, or PlainError with Kafka's message."""
    try:
        text = token.decode("utf-8")
    except UnicodeDecodeError:
        raise PlainError("Invalid SASL/PLAIN response: not UTF-8") from None
    parts = text.split("\x00")
    if len(parts) != 3:
        raise PlainError("Invalid SASL/PLAIN response: expected 3 tokens, got " + str(len(parts)))
    authzid, user, password = parts
    if not user:
        raise PlainError("Authentication failed: username not specified")
    if not password:
        raise PlainError("Authentication failed: password not specified")
    expected = users.get(user)
    if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
        raise PlainError("Authentication failed: Invalid username or password")
    if authzid and authzid != user:
        raise PlainError(
            "Authentication failed: Client requested an authorization id that is different from username"
        )
    return user
