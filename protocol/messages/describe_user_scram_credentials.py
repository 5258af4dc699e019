"""DescribeUserScramCredentials (API key 50), version 0, flexible (KIP-554).

Version notes: only v0; Users null or empty describes every user with a credential.
"""

from __future__ import annotations

from groupcoord.protocol.schema import INT8, INT16, INT32, STRING, array, f, message, struct


@struct
class UserName:
    name: str = f(STRING, "0+")


@message(50, "request", valid="0", flexible="0+")
class DescribeUserScramCredentialsRequest:
    users: tuple[UserName, ...] | None = f(array(UserName), "0+", nullable="0+")


@struct
class CredentialInfo:
    mechanism: int = f(INT8, "0+")
    iterations: int = f(INT32, "0+")


@struct
class DescribeUserScramCredentialsResult:
    user: str = f(STRING, "0+")
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+")
    credential_infos: tuple[CredentialInfo, ...] = f(array(CredentialInfo), "0+")


@message(50, "response", valid="0", flexible="0+")
class DescribeUserScramCredentialsResponse:
    throttle_time_ms: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+")
    results: tuple[DescribeUserScramCredentialsResult, ...] = f(
        array(DescribeUserScramCredentialsResult), "0+"
    )
