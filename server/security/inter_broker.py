"""The client side of inter-broker traffic (cluster mode's forwarded WriteTxnMarkers), secured as Kafka's is.

Kafka's settings, Kafka's meaning:

* `inter.broker.listener.name` names the listener brokers talk to each other on; or
  `security.inter.broker.protocol` names it by its security protocol (the listener of that name). Only one of
  the two may be set. Neither set: the first listener (groupcoord's default; Kafka's is the PLAINTEXT one).
  In cluster mode that listener's advertised address is what the node registers (`nodes` row), so the other
  nodes connect to it.
* On an SSL or SASL_SSL inter-broker listener the node connects with TLS: the server certificate is checked
  against `ssl.truststore.location` (the system CAs when unset) and, with Kafka's default
  `ssl.endpoint.identification.algorithm=https`, against the host name (empty: not checked); the node
  presents its `ssl.keystore.location` certificate, so with `ssl.client.auth=required` the receiving node
  sees `User:<its subject>`.
* On a SASL_PLAINTEXT or SASL_SSL one it authenticates with `sasl.mechanism.inter.broker.protocol` (PLAIN,
  SCRAM-SHA-256 or SCRAM-SHA-512) using the `username="..." password="..."` options of the JAAS config
  (`--sasl-jaas-config`), as Kafka's broker takes its client credentials from its login module's options.

The principal that forwards must be allowed CLUSTER_ACTION on the Cluster resource where an authorizer is
on (Kafka's check on WriteTxnMarkers): make it a super user (`--super-users User:admin`) or grant it.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import re
import secrets
import ssl
import struct
from dataclasses import dataclass
from typing import Any

import structlog

from groupcoord.protocol.codec import decode_response, encode_request
from groupcoord.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from groupcoord.protocol.messages.sasl_handshake import SaslHandshakeRequest
from groupcoord.server.config import ServerConfig
from groupcoord.server.net.listeners import SECURITY_PROTOCOLS, Listener

log = structlog.get_logger("groupcoord.security")

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_SCRAM_ALGO = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
_JAAS_OPTION = r'(?<![\w])%s\s*=\s*"((?:[^"\\]|\\.)*)"'
TIMEOUT_S = 10.0

Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class InterBrokerAuthError(ConnectionError):
    """The other node refused this node's SASL login (a ConnectionError: the caller retries and logs it)."""


def jaas_option(jaas: str, name: str) -> str | None:
    """The value of `name="..."` in a JAAS config (not `user_name="..."`), unescaped."""
    m = re.search(_JAAS_OPTION % re.escape(name), jaas)
    return m.group(1).replace('\\"', '"').replace("\\\\", "\\") if m else None


def choose_listener(cfg: ServerConfig, listeners: tuple[Listener, ...]) -> Listener:
    """The inter-broker listener (`check_problems` has refused the settings that name none)."""
    if cfg.inter_broker_listener_name:
        wanted = cfg.inter_broker_listener_name.strip().upper()
    elif cfg.security_inter_broker_protocol:
        wanted = cfg.security_inter_broker_protocol.strip().upper()
    else:
        return listeners[0]
    return next(x for x in listeners if x.name == wanted)


def check_problems(cfg: ServerConfig, listeners: tuple[Listener, ...], jaas: str) -> list[str]:
    """What Kafka's KafkaConfig refuses about the inter-broker settings, as messages."""
    problems = []
    if cfg.inter_broker_listener_name and cfg.security_inter_broker_protocol:
        return ["give --inter-broker-listener-name or --security-inter-broker-protocol, not both"]
    proto = (cfg.security_inter_broker_protocol or "").strip().upper()
    if proto and proto not in SECURITY_PROTOCOLS:
        return [f"--security-inter-broker-protocol must be one of {', '.join(SECURITY_PROTOCOLS)}"]
    wanted = (cfg.inter_broker_listener_name or proto).strip().upper()
    if wanted and all(x.name != wanted for x in listeners):
        flag = (
            "--inter-broker-listener-name"
            if cfg.inter_broker_listener_name
            else "--security-inter-broker-protocol"
        )
        return [f"{flag}: {wanted} is not one of the listeners ({', '.join(x.name for x in listeners)})"]
    if cfg.ssl_endpoint_identification_algorithm.strip().lower() not in ("https", ""):
        problems.append("--ssl-endpoint-identification-algorithm must be https or empty")
    mechanism = cfg.sasl_mechanism_inter_broker_protocol
    if mechanism not in MECHANISMS:
        problems.append(f"--sasl-mechanism-inter-broker-protocol must be one of {', '.join(MECHANISMS)}")
    chosen = choose_listener(cfg, listeners)
    if cfg.cluster and chosen.is_sasl:  # a single node never connects to another
        enabled = [m.strip() for m in cfg.sasl_enabled_mechanisms.split(",") if m.strip()]
        if mechanism not in enabled:
            problems.append(
                f"--sasl-mechanism-inter-broker-protocol {mechanism} must be one of --sasl-enabled-mechanisms"
            )
        if jaas_option(jaas, "username") is None or jaas_option(jaas, "password") is None:
            problems.append(
                f"the inter-broker listener {chosen.name} is {chosen.protocol}: give this node's own login as "
                'username="..." password="..." in --sasl-jaas-config (as Kafka\'s broker JAAS config does)'
            )
    return problems


@dataclass
class InterBrokerClient:
    """Opens authenticated connections to other nodes' inter-broker listeners (`connect`)."""

    listener: Listener
    mechanism: str
    username: str | None
    password: str | None
    tls: ssl.SSLContext | None

    @classmethod
    def from_config(cls, cfg: ServerConfig, listeners: tuple[Listener, ...], jaas: str) -> InterBrokerClient:
        listener = choose_listener(cfg, listeners)
        tls = None
        if listener.is_ssl:
            tls = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=cfg.ssl_truststore_location)
            tls.minimum_version = ssl.TLSVersion.TLSv1_2
            tls.check_hostname = cfg.ssl_endpoint_identification_algorithm.strip().lower() == "https"
            if cfg.ssl_keystore_location:
                tls.load_cert_chain(cfg.ssl_keystore_location, password=cfg.ssl_key_password)
        return cls(
            listener,
            cfg.sasl_mechanism_inter_broker_protocol,
            jaas_option(jaas, "username"),
            jaas_option(jaas, "password"),
            tls,
        )

    async def connect(self, host: str, port: int) -> Connection:
        """A connection to another node, TLS and SASL done; OSError/ConnectionError when that fails."""
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, ssl=self.tls, server_hostname=host if self.tls else None),
            TIMEOUT_S,
        )
        if self.listener.is_sasl:
            try:
                await asyncio.wait_for(self._login(reader, writer), TIMEOUT_S)
            except BaseException:
                writer.close()
                raise
        return reader, writer

    async def _login(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        correlation = 0

        async def call(api_key: int, version: int, body: Any) -> Any:
            nonlocal correlation
            correlation += 1
            writer.write(encode_request(api_key, version, correlation, body))
            await writer.drain()
            size = struct.unpack(">i", await reader.readexactly(4))[0]
            return decode_response(await reader.readexactly(size), api_key, version)[1]

        shake = await call(17, 1, SaslHandshakeRequest(mechanism=self.mechanism))
        if shake.error_code != 0:
            raise InterBrokerAuthError(
                f"inter-broker SASL: {self.mechanism} not enabled there (it offers {list(shake.mechanisms)})"
            )

        async def step(token: bytes) -> bytes:
            resp = await call(36, 2, SaslAuthenticateRequest(auth_bytes=token))
            if resp.error_code != 0:
                log.warning(
                    "inter-broker SASL login refused", mechanism=self.mechanism, error=resp.error_message
                )
                raise InterBrokerAuthError(f"inter-broker SASL login refused: {resp.error_message}")
            return bytes(resp.auth_bytes)

        user, password = self.username or "", self.password or ""
        if self.mechanism == "PLAIN":
            await step(b"\x00" + user.encode() + b"\x00" + password.encode())
            return
        await scram_exchange(step, self.mechanism, user, password)


async def scram_exchange(step: Any, mechanism: str, user: str, password: str) -> None:
    """The client side of RFC 5802 (SCRAM-SHA-256/512); the server's signature is checked too."""
    algo = _SCRAM_ALGO[mechanism]
    name = user.replace("=", "=3D").replace(",", "=2C")
    nonce = secrets.token_urlsafe(24)
    bare = f"n={name},r={nonce}"
    server_first = (await step(f"n,,{bare}".encode())).decode()
    attrs = dict(kv.split("=", 1) for kv in server_first.split(","))
    if not attrs.get("r", "").startswith(nonce):
        raise InterBrokerAuthError("inter-broker SCRAM: the server's nonce does not extend ours")
    salted = hashlib.pbkdf2_hmac(algo, password.encode(), base64.b64decode(attrs["s"]), int(attrs["i"]))
    client_key = hmac.new(salted, b"Client Key", algo).digest()
    without_proof = f"c=biws,r={attrs['r']}"
    auth = f"{bare},{server_first},{without_proof}".encode()
    signature = hmac.new(hashlib.new(algo, client_key).digest(), auth, algo).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    final = (await step(f"{without_proof},p={base64.b64encode(proof).decode()}".encode())).decode()
    server_key = hmac.new(salted, b"Server Key", algo).digest()
    expected = base64.b64encode(hmac.new(server_key, auth, algo).digest()).decode()
    if not hmac.compare_digest(final.partition("v=")[2].split(",")[0], expected):
        raise InterBrokerAuthError("inter-broker SCRAM: the server's signature is wrong")
