"""Kafka's `listeners`, `advertised.listeners` and `listener.security.protocol.map`, parsed and checked.

Formats are Kafka's: `listeners=INTERNAL://0.0.0.0:9092,EXTERNAL://:19092` (an empty host binds every
interface), `listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:SASL_SSL`. A listener name that is
itself a security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL) maps to it by default, as in Kafka.

Each connection remembers the listener it came in on, and Metadata, FindCoordinator and DescribeCluster answer
with that listener's advertised address (Kafka's `KafkaApis` does the same with `request.context.listenerName`).

No I/O here: the broker binds the sockets (`Broker.start`) and then `resolve_bound_port` fills in the port of
a listener configured with port 0, exactly as Kafka advertises the port it bound.
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_PROTOCOL_MAP = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
_ENDPOINT = re.compile(r"^([A-Za-z0-9_.-]+)://\[?([0-9a-zA-Z\-%._:]*?)\]?:(-?[0-9]+)$")


class ListenerError(ValueError):
    """A listener setting Kafka would reject (its ConfigException); the message names the setting."""


@dataclass(frozen=True)
class Endpoint:
    name: str
    host: str
    port: int


@dataclass(frozen=True)
class Listener:
    """One socket the server listens on, its security protocol and the address clients are told."""

    name: str
    protocol: str
    host: str  # bind address; "" binds every interface
    port: int  # 0: the OS picks
    advertised_host: str
    advertised_port: int  # 0 until the port is bound (then the bound port)

    @property
    def is_ssl(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def is_sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")


def parse_endpoints(text: str, setting: str) -> list[Endpoint]:
    """`NAME://host:port,...` (Kafka's `CoreUtils.listenerListToEndPoints`): names unique, ports in range."""
    out: list[Endpoint] = []
    for raw in (part.strip() for part in text.split(",")):
        if not raw:
            continue
        m = _ENDPOINT.match(raw)
        if m is None:
            raise ListenerError(f"{setting}: {raw!r} is not NAME://host:port")
        name, host, port = m.group(1).upper(), m.group(2), int(m.group(3))
        if not 0 <= port <= 65535:
            raise ListenerError(f"{setting}: port {port} of {name} is out of range")
        if any(e.name == name for e in out):
            raise ListenerError(f"{setting}: each listener must have a different name, {name} repeats")
        out.append(Endpoint(name, host, port))
    if not out:
        raise ListenerError(f"{setting}: no listener given")
    return out


def parse_protocol_map(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for raw in (part.strip() for part in text.split(",")):
        if not raw:
            continue
        name, sep, proto = raw.partition(":")
        proto = proto.strip().upper()
        if not sep or not name.strip():
            raise ListenerError(f"listener.security.protocol.map: {raw!r} is not NAME:PROTOCOL")
        if proto not in SECURITY_PROTOCOLS:
            raise ListenerError(
                f"listener.security.protocol.map: {proto!r} is not one of {', '.join(SECURITY_PROTOCOLS)}"
            )
        out[name.strip().upper()] = proto
    return out


def build_listeners(listeners: str, advertised: str | None, protocol_map: str | None) -> tuple[Listener, ...]:
    """The listeners as Kafka would run them, or `ListenerError` for what Kafka refuses at start."""
    bound = parse_endpoints(listeners, "listeners")
    mapping = parse_protocol_map(protocol_map or DEFAULT_PROTOCOL_MAP)
    told = {e.name: e for e in parse_endpoints(advertised, "advertised.listeners")} if advertised else {}
    for name in told:
        if all(e.name != name for e in bound):
            raise ListenerError(f"advertised.listeners: {name} is not one of the listeners")
    ports = [e.port for e in bound if e.port]
    if len(ports) != len(set(ports)):
        raise ListenerError("listeners: each listener must have a different port")
    out = []
    for e in bound:
        proto = mapping.get(e.name)
        if proto is None:
            raise ListenerError(
                f"listener.security.protocol.map: no security protocol for listener {e.name} "
                f"(add {e.name}:PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)"
            )
        adv = told.get(e.name, e)
        host = adv.host
        if not host:
            host = socket.getfqdn()  # Kafka advertises the canonical host name for an empty host
        elif host in ("0.0.0.0", "::"):
            raise ListenerError(
                f"advertised.listeners: {e.name} cannot advertise the non-routable meta-address {host}; "
                "give its address in --advertised-listeners"
            )
        out.append(Listener(e.name, proto, e.host, e.port, host, adv.port))
    return tuple(out)


def single_plaintext(
    host: str, port: int, advertised_host: str | None, advertised_port: int | None
) -> Listener:
    """The old `--host/--port/--advertised-host/--advertised-port`: one PLAINTEXT listener (unchanged meaning:
    the bind host is advertised as given, even 0.0.0.0)."""
    return Listener("PLAINTEXT", "PLAINTEXT", host, port, advertised_host or host, advertised_port or port)


def resolve_bound_port(listener: Listener, bound_port: int) -> Listener:
    """A listener configured with port 0 (or advertised with port 0) advertises the port the OS gave it."""
    if listener.advertised_port:
        return listener
    return Listener(
        listener.name,
        listener.protocol,
        listener.host,
        listener.port,
        listener.advertised_host,
        bound_port,
    )
