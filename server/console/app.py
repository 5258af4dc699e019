"""Routes `/ui` requests of the admin listener: the pages, their JSON, credentials and a short cache.

Read-only: GET and HEAD only. The JSON of each page is cached for `cache_ms` per (viewer, page), so any
number of open browsers polling every second costs at most one build per page per period on the event
loop; builds are synchronous and bounded (views.py), and nothing here awaits the Kafka listeners.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.parse
from collections.abc import Callable
from importlib import resources
from typing import Any

import structlog

from groupcoord.server.console import views
from groupcoord.server.console.auth import ConsoleAuth, Viewer
from groupcoord.server.console.timeline import RebalanceTimeline

log = structlog.get_logger("groupcoord.console")

#: (status line, content type, body, extra header lines)
Answer = tuple[str, str, bytes, list[str]]

STATIC = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
JSON = "application/json"


def _static(name: str) -> bytes:
    return resources.files("groupcoord.server.console").joinpath("static", name).read_bytes()


class Console:
    def __init__(
        self,
        source: views.ConsoleSource,
        auth: ConsoleAuth | None = None,
        cache_ms: int = 500,
        failed_delay_ms: int = 100,
    ) -> None:
        self.source = source
        self.auth = auth or ConsoleAuth(None, False)
        self.timeline = RebalanceTimeline()
        self.cache_ms = cache_ms
        self.failed_delay_ms = failed_delay_ms
        self._cache: dict[tuple[str, str], tuple[float, bytes]] = {}
        self._files = {name: _static(name) for name in STATIC}
        self.builds = 0  # JSON answers built (not served from the cache): tests and the bench read it

    # the journal listener
    def on_event(self, event: dict[str, Any]) -> None:
        self.timeline.on_event(event)

    async def handle(self, head: bytes, peer_host: str) -> Answer:
        lines = head.decode("latin-1").split("\r\n")
        method, target = lines[0].split(" ")[0:2]
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        if method not in ("GET", "HEAD"):
            return (
                "405 Method Not Allowed",
                "text/plain",
                b"the console is read-only: GET only\n",
                ["Allow: GET, HEAD"],
            )
        principal = self.auth.check(headers.get("authorization"))
        if principal is None:
            await asyncio.sleep(self.failed_delay_ms / 1000)
            log.info("console login refused", host=peer_host)
            return (
                "401 Unauthorized",
                "text/plain",
                b"credentials needed: a SASL user of this server\n",
                ['WWW-Authenticate: Basic realm="groupcoord", charset="UTF-8"'],
            )
        answer = self._route(target, Viewer(principal, peer_host))
        if method == "HEAD":
            return answer[0], answer[1], b"", answer[3]
        return answer

    def _route(self, target: str, viewer: Viewer) -> Answer:
        url = urllib.parse.urlsplit(target)
        path = url.path
        if path in ("/ui", "/ui/"):
            return "200 OK", STATIC["index.html"], self._files["index.html"], ["Cache-Control: no-cache"]
        if path == "/favicon.ico":  # asked by browsers (and tools) at the root whatever the page names
            return (
                "200 OK",
                STATIC["favicon.svg"],
                self._files["favicon.svg"],
                ["Cache-Control: max-age=86400"],
            )
        if path.startswith("/ui/static/"):
            name = path[len("/ui/static/") :]
            if name in self._files:
                return "200 OK", STATIC[name], self._files[name], ["Cache-Control: no-cache"]
            return "404 Not Found", "text/plain", b"no such file\n", []
        if not path.startswith("/ui/api/"):
            return "404 Not Found", "text/plain", b"not found: the console is at /ui\n", []
        page = path[len("/ui/api/") :]
        query = urllib.parse.parse_qs(url.query)
        visible = self.auth.visible(viewer) or views.everything
        src, tl = self.source, self.timeline
        gid = query.get("id", [""])[0]
        pages: dict[str, Callable[[], Any]] = {
            "overview": lambda: views.overview(src, visible),
            "groups": lambda: views.groups(src, tl, visible),
            "group": lambda: views.group(src, tl, gid, visible),
            "topics": lambda: views.topics(src, visible),
            "transactions": lambda: views.transactions(src, visible),
        }
        build = pages.get(page)
        if build is None:
            return "404 Not Found", JSON, b'{"error": "no such page"}', []
        key = (viewer.principal, target)
        now = time.monotonic()
        hit = self._cache.get(key)
        if hit is not None and hit[0] > now:
            body = hit[1]
        else:
            data = build()
            if data is None:
                if query.get("soft") == ["1"]:
                    # the page's own ask: a stale link to a group that is gone is an answer (null), not a
                    # failed load in the browser's console; tools get their 404
                    return "200 OK", JSON, b"null", ["Cache-Control: no-store"]
                return "404 Not Found", JSON, b'{"error": "no such group"}', []
            body = json.dumps(data, separators=(",", ":")).encode()
            self.builds += 1
            if len(self._cache) > 256:
                self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
            self._cache[key] = (now + self.cache_ms / 1000, body)
        return "200 OK", JSON, body, ["Cache-Control: no-store"]
