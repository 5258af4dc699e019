"""Reading the HTTP control endpoint's requests strictly: the path decoded segment by segment, unknown fields
refused by name, values checked for their JSON type.

Why strict: the endpoint is driven by hand-written JSON from other languages. A misspelt field silently
ignored changes what a test does without telling it (`{"grup": "orders"}` would inject a fault into every
group), and `int()` on whatever arrived turns `1.7` into 1 and `{}` into a TypeError's wording. Every refusal
here is an `HttpError` with a message that names the field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from urllib.parse import parse_qs, unquote, urlsplit

_MISSING: object = object()


class HttpError(Exception):
    def __init__(self, status: int, message: str, allow: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.status = status
        self.allow = allow  # for 405: the methods the path does take


def split_target(target: str) -> tuple[list[str], dict[str, str]]:
    """`/v1/groups/orders%3Fv%3D2/wait?state=Stable` -> (["v1", "groups", "orders?v=2", "wait"], {"state":
    "Stable"}). The path is split on `/` before percent-decoding, so an encoded `/`, `?` or `#` stays inside
    its segment; segments decode as UTF-8 (a bad escape is a 400, never a silently replaced character). Empty
    segments are kept (`/v1/groups//wait` is not `/v1/groups/wait`); only one trailing `/` is dropped."""
    parts = urlsplit(target)
    if not parts.path.startswith("/"):
        raise HttpError(400, f"the request target must be a path, not {target!r}")
    raw = parts.path[1:].split("/")
    if len(raw) > 1 and raw[-1] == "":
        raw.pop()
    try:
        path = [unquote(p, errors="strict") for p in raw]
        pairs = parse_qs(parts.query, keep_blank_values=True, errors="strict")
    except UnicodeDecodeError:
        raise HttpError(400, "the path or query is not percent-encoded UTF-8") from None
    query = {}
    for key, values in pairs.items():
        if len(values) > 1:
            raise HttpError(400, f"query field {key!r} given {len(values)} times")
        query[key] = values[0]
    return path, query


def check_fields(where: str, given: Iterable[str], known: Iterable[str]) -> None:
    """Refuse the first field of `given` not in `known`, naming it and what would have been accepted."""
    known = sorted(known)
    for name in given:
        if name not in known:
            accepted = ", ".join(known) if known else "none"
            raise HttpError(400, f"unknown {where} field {name!r} (accepted: {accepted})")


def whole(
    body: Mapping[str, object],
    name: str,
    *,
    default: object = _MISSING,
    minimum: int | None = None,
    nullable: bool = False,
) -> int | None:
    """A JSON integer (not a float, string or bool); `default` when absent, required when no default."""
    value = body.get(name, _MISSING)
    if value is _MISSING:
        if default is _MISSING:
            raise HttpError(400, f"field {name!r} is required")
        return default  # type: ignore[return-value]
    if value is None and nullable:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        kind = "a whole number or null" if nullable else "a whole number"
        raise HttpError(400, f"field {name!r} must be {kind}, not {_show(value)}")
    if minimum is not None and value < minimum:
        raise HttpError(400, f"field {name!r} must be at least {minimum}, not {value}")
    return value


def flag(body: Mapping[str, object], name: str, default: bool = False) -> bool:
    value = body.get(name, default)
    if not isinstance(value, bool):
        raise HttpError(400, f"field {name!r} must be true or false, not {_show(value)}")
    return value


def text(body: Mapping[str, object], name: str, default: str | None = None) -> str | None:
    value = body.get(name, default)
    if value is not None and not isinstance(value, str):
        raise HttpError(400, f"field {name!r} must be a string or null, not {_show(value)}")
    return value


def name_or_code(body: Mapping[str, object], name: str, default: str | int | None = None) -> str | int | None:
    """An API or error given by Kafka name (`"JoinGroup"`) or number."""
    value = body.get(name, default)
    if value is not None and (isinstance(value, bool) or not isinstance(value, str | int)):
        raise HttpError(400, f"field {name!r} must be a name or a number, not {_show(value)}")
    return value


def names_or_codes(body: Mapping[str, object], name: str) -> tuple[str | int, ...]:
    """One API or a list of them (by name or key); absent: none."""
    value = body.get(name, [])
    items = [value] if isinstance(value, str | int) and not isinstance(value, bool) else value
    if not isinstance(items, list) or any(isinstance(v, bool) or not isinstance(v, str | int) for v in items):
        raise HttpError(400, f"field {name!r} must be a name, a number or a list of them, not {_show(value)}")
    return tuple(items)


def wholes(body: Mapping[str, object], name: str) -> tuple[int, ...]:
    value = body.get(name, [])
    if not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, int) for v in value):
        raise HttpError(400, f"field {name!r} must be a list of whole numbers, not {_show(value)}")
    return tuple(value)


def query_whole(query: Mapping[str, str], name: str, default: int | None = None) -> int | None:
    value = query.get(name)
    if value is None:
        return default
    if not value.isascii() or not value.isdigit():
        raise HttpError(400, f"query field {name!r} must be a whole number, not {value!r}")
    return int(value)


def _show(value: object) -> str:
    """A value as the JSON it arrived as, with its kind where the text alone is unclear: `an object {}`."""
    kind = {dict: "an object ", list: "a list ", str: "the string "}.get(type(value), "")
    shown = kind + json.dumps(value, ensure_ascii=False)
    return shown if len(shown) <= 60 else shown[:57] + "..."
