"""SaslHandshake (17) v0-1 and SaslAuthenticate (36) v0-2 once they reach a handler.

Before authentication on a SASL listener the connection's gate (`server.security.gate`) answers them; a
handler sees them only on a connection that is already authenticated, or on a listener without SASL. Kafka's
KafkaApis answers both with ILLEGAL_SASL_STATE then, and so do we (no KIP-368 re-authentication).
"""

from __future__ import annotations

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.sasl_authenticate import SaslAuthenticateRequest, SaslAuthenticateResponse
from groupcoord.protocol.messages.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse
from groupcoord.server.apis import authz
from groupcoord.server.apis.declaration import Api
from groupcoord.server.net.dispatch import RequestContext


def sasl_handshake(ctx: RequestContext, req: SaslHandshakeRequest) -> SaslHandshakeResponse:
    return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=())


def sasl_authenticate(ctx: RequestContext, req: SaslAuthenticateRequest) -> SaslAuthenticateResponse:
    message = (
        "SaslAuthenticate request received after successful authentication"
        if ctx.listener.is_sasl
        else f"SaslAuthenticate on the {ctx.listener.protocol} listener {ctx.listener.name}"
    )
    return SaslAuthenticateResponse(
        error_code=ErrorCode.ILLEGAL_SASL_STATE, error_message=message, auth_bytes=b""
    )


APIS = (
    Api(key=ApiKey.SASL_HANDSHAKE, handler=sasl_handshake, check=authz.open_to_all),
    Api(key=ApiKey.SASL_AUTHENTICATE, handler=sasl_authenticate, check=authz.open_to_all),
)
