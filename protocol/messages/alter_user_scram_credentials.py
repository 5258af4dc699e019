"""AlterUserScramCredentials (API key 51), version 0, flexible (KIP-554).

Version notes: only v0; upsertions carry the salt and the salted password (never the password itself).
"""

from __future__ import annotations

from groupcoord.protocol.schema import BYTES, INT8, INT16, INT32, STRING, array, f, message, struct


@struct
class ScramCredentialDeletion:
    name: str = f(STRING, "0+")
    mechanism: int = f(INT8, "0+")


@struct
class ScramCredentialUpsertion:
    name: str = f(STRING, "0+")
    mechanism: int = f(INT8, "0+")
    iterations: int = f(INT32, "0+")
    salt: bytes = f(BYTES, "0+")
    salted_password: bytes = f(BYTES, "0+")


@message(51, "request", valid="0", flexible="0+")
class AlterUserScramCredentialsRequest:
    deletions: tuple[ScramCredentialDeletion, ...] = f(array(ScramCredentialDeletion), "0+")
    upsertions: tuple[ScramCredentialUpsertion, ...] = f(array(ScramCredentialUpsertion), "0+")


@struct
class AlterUserScramCredentialsResult:
    user: str = f(STRING, "0+")
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+")


@message(51, "response", valid="0", flexible="0+")
class AlterUserScramCredentialsResponse:
    throttle_time_ms: int = f(INT32, "0+")
    results: tuple[AlterUserScramCredentialsResult, ...] = f(array(AlterUserScramCredentialsResult), "0+")
