"""TLS for SSL and SASL_SSL listeners with the standard library's `ssl`, configured with Kafka's names.

Keys and certificates are PEM files (Kafka's `ssl.keystore.type=PEM` / `ssl.truststore.type=PEM`):
`ssl.keystore.location` holds the private key and the certificate chain, `ssl.truststore.location` the CA
certificates client certificates are checked against. `ssl.client.auth` is required, requested or none.
The principal of a client that presented a certificate is `User:` + its subject in RFC 2253 form, as Kafka's
DefaultKafkaPrincipalBuilder gives without `ssl.principal.mapping.rules`.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass

CLIENT_AUTH = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}
_SHORT = {
    "commonName": "CN",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}


@dataclass(frozen=True)
class TlsSettings:
    keystore_location: str
    key_password: str | None
    truststore_location: str | None
    client_auth: str  # required | requested | none


def server_context(s: TlsSettings) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2  # Kafka's ssl.enabled.protocols: TLSv1.2,TLSv1.3
    ctx.load_cert_chain(s.keystore_location, password=s.key_password)
    ctx.verify_mode = CLIENT_AUTH[s.client_auth]
    if s.truststore_location:
        ctx.load_verify_locations(s.truststore_location)
    return ctx


def _escape(value: str) -> str:
    out = "".join("\\" + ch if ch in ',+"\\<>;=' else ch for ch in value)
    if out.startswith(("#", " ")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def principal_from_peercert(cert: dict | None) -> str | None:  # type: ignore[type-arg]
    """`User:CN=client,OU=eng,O=acme` for a verified client certificate (RDNs most specific first, as
    X500Principal.getName() writes RFC 2253), or None when the client sent none."""
    if not cert or not cert.get("subject"):
        return None
    rdns = []
    for rdn in reversed(cert["subject"]):
        rdns.append("+".join(f"{_SHORT.get(k, k)}={_escape(v)}" for k, v in rdn))
    return "User:" + ",".join(rdns)
