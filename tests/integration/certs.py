"""Test certificates made with the `openssl` CLI: a CA, a server certificate for 127.0.0.1/localhost, and
client certificates, as PEM files (the server's keystore is its key followed by its certificate)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Certs:
    ca: Path  # CA certificate (truststore for both sides)
    server_keystore: Path  # server key + certificate
    client_cert: Path
    client_key: Path
    client_subject: str  # as Kafka prints the principal: RFC 2253, most specific first


def _run(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def _key(path: Path) -> None:
    """An EC key as unencrypted PKCS#8 (what Kafka's PEM keystores read, and Python's ssl too)."""
    raw = path.with_suffix(".sec1")
    _run("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", str(raw))
    _run("pkcs8", "-topk8", "-nocrypt", "-in", str(raw), "-out", str(path))


def _signed(d: Path, name: str, subject: str, ext: str) -> tuple[Path, Path]:
    key, csr, cert, extfile = d / f"{name}.key", d / f"{name}.csr", d / f"{name}.pem", d / f"{name}.ext"
    _key(key)
    _run("req", "-new", "-key", str(key), "-subj", subject, "-out", str(csr))
    extfile.write_text(ext)
    _run(
        "x509", "-req", "-in", str(csr), "-CA", str(d / "ca.pem"), "-CAkey", str(d / "ca.key"),
        "-CAcreateserial", "-days", "2", "-out", str(cert), "-extfile", str(extfile),
    )  # fmt: skip
    return key, cert


def make_certs(d: Path) -> Certs:
    d.mkdir(parents=True, exist_ok=True)
    _key(d / "ca.key")
    _run(
        "req", "-x509", "-new", "-key", str(d / "ca.key"), "-subj", "/CN=groupcoord-test-ca", "-days", "2",
        "-out", str(d / "ca.pem"),
    )  # fmt: skip
    skey, scert = _signed(
        d,
        "server",
        "/CN=localhost",
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n",
    )
    keystore = d / "server-keystore.pem"
    keystore.write_text(skey.read_text() + scert.read_text())
    ckey, ccert = _signed(
        d, "client", "/C=NL/O=acme/OU=payments/CN=alice-client", "extendedKeyUsage=clientAuth\n"
    )
    return Certs(d / "ca.pem", keystore, ccert, ckey, "CN=alice-client,OU=payments,O=acme,C=NL")


def make_node_cert(d: Path, name: str = "node", san: str = "IP:127.0.0.1,DNS:localhost") -> tuple[Path, str]:
    """A broker's keystore (key + certificate signed by `make_certs`'s CA in `d`) usable both ways, as
    inter-broker TLS needs: serverAuth for its listener, clientAuth when it connects to another node.
    -> (keystore, its principal as Kafka names it)."""
    key, cert = _signed(
        d,
        name,
        f"/O=groupcoord/CN={name}",
        f"subjectAltName={san}\nextendedKeyUsage=serverAuth,clientAuth\n",
    )
    keystore = d / f"{name}-keystore.pem"
    keystore.write_text(key.read_text() + cert.read_text())
    return keystore, f"User:CN={name},O=groupcoord"
