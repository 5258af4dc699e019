"""`postgresql://` URLs of `--storage` and `--cluster`: checked at start, shown without their password.

asyncpg parses the URL only when the store first connects, and a malformed one (a port that is no number, a
broken IPv6 bracket) surfaces there as a bare ValueError with a traceback. `url_problem` applies the same
rules as asyncpg's parser up front, so the CLI can refuse the URL with one line and exit status 1. It does not
import asyncpg: configuration checks stay cheap.
"""

from __future__ import annotations

import re
import urllib.parse

SCHEMES = ("postgresql", "postgres")
_BRACKETED = re.compile(r"\[([^\]]+)\](?::(.*))?")


def redact(url: str) -> str:
    """`url` without a password (for logs and errors)."""
    scheme, sep, rest = url.partition("://")
    creds, at, host = rest.rpartition("@")
    if not at or ":" not in creds:
        return url
    return f"{scheme}{sep}{creds.split(':', 1)[0]}:***@{host}"


def _port_problem(port: str) -> str | None:
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        return f"port {port!r} is not a number from 1 to 65535"
    return None


def url_problem(url: str) -> str | None:
    """Why `url` is not a usable postgresql:// URL, or None. A host is required (in the URL or as `?host=`):
    a URL without one would quietly reach whatever server libpq's defaults name."""
    scheme, sep, _ = url.partition("://")
    if not sep or scheme not in SCHEMES:
        return "not a postgresql:// URL"
    try:
        parts = urllib.parse.urlsplit(url)
        query = urllib.parse.parse_qs(parts.query)
    except ValueError as exc:
        return f"not a valid URL ({exc})"
    hostlist = parts.netloc.rpartition("@")[2]
    if not hostlist and not query.get("host"):
        return "no host: give postgresql://user@host:port/database"
    for spec in hostlist.split(",") if hostlist else ():
        if spec.startswith("["):
            m = _BRACKETED.fullmatch(spec)
            if m is None:
                return f"{spec!r} is not a valid [IPv6] address"
            host, port = m.group(1), m.group(2) or ""
        else:
            host, _, port = spec.partition(":")
        if not host:
            return f"no host in {spec!r}: give host:port"
        if port and (problem := _port_problem(port)) is not None:
            return problem
    for ports in query.get("port", ()):
        for port in ports.split(","):
            if (problem := _port_problem(port)) is not None:
                return problem
    return None
