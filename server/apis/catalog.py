"""The declared APIs, collected: every module of `server.apis` that has `APIS` contributes its declarations.

The broker builds the dispatcher from this (`handlers`, `while_loading`, `fast_lanes`), cluster routing reads
the group ids from it (`routing.Router`), and the test controls the coordinator APIs (`coordinator_apis`).
A new API module needs no entry anywhere: it is found by its `APIS`. The rules a declaration must keep are
checked here, once, when the catalog is first read (`check_declarations`).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Iterable, Mapping

from groupcoord.protocol.api import SUPPORTED, ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.apis.authz import super_users_only
from groupcoord.server.apis.declaration import Api, Feature, answering
from groupcoord.server.net.dispatch import FastLane, Handler

#: groupcoord.server.apis: its modules are searched for `APIS`
PACKAGE = __name__.rpartition(".")[0]


@functools.cache
def collect() -> tuple[Api, ...]:
    """Every declared API, in key order."""
    package = importlib.import_module(PACKAGE)
    found: list[Api] = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{PACKAGE}.{info.name}")
        found.extend(getattr(module, "APIS", ()))
    check_declarations(found)
    return tuple(sorted(found, key=lambda a: int(a.key)))


def check_declarations(declared: Iterable[Api]) -> None:
    """Each key declared once, with a codec; an API routed by group has the answer a node that does not
    serve the group (or is loading it) gives."""
    seen: set[ApiKey] = set()
    for api in declared:
        if api.key in seen:
            raise ValueError(f"{api.key.name} is declared twice")
        seen.add(api.key)
        if api.key not in SUPPORTED:
            raise ValueError(f"{api.key.name} is declared but has no codec (protocol.api.SUPPORTED)")
        if api.groups is not None and api.while_loading is None:
            raise ValueError(f"{api.key.name} is routed by group but has no while_loading answer")


def offered(declared: Iterable[Api], features: Mapping[Feature, bool]) -> tuple[Api, ...]:
    """The APIs whose feature (if any) is on."""
    return tuple(a for a in declared if a.feature is None or features.get(a.feature, False))


def handlers(declared: Iterable[Api], *, authorizer: bool) -> dict[ApiKey, Handler]:
    """The dispatcher's handler table: with an authorizer each handler has its ACL check in front (None: the
    API is for super users only); the `before_check` wrappers go in front of that."""
    out: dict[ApiKey, Handler] = {}
    for api in declared:
        handler = api.handler
        if authorizer:
            handler = (api.check or super_users_only)(handler)
        for wrap in api.before_check:
            handler = wrap(handler)
        out[api.key] = handler
    return out


def while_loading(declared: Iterable[Api]) -> dict[int, Handler]:
    """What answers instead of the handler while the state loads: COORDINATOR_LOAD_IN_PROGRESS."""
    return {
        int(a.key): answering(a, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS) for a in declared if a.while_loading
    }


def fast_lanes(declared: Iterable[Api]) -> dict[ApiKey, FastLane]:
    return {a.key: a.fast_lane for a in declared if a.fast_lane is not None}


def coordinator_apis() -> tuple[ApiKey, ...]:
    """The APIs a client sends to its group coordinator (what "the coordinator is unavailable" takes)."""
    return tuple(a.key for a in collect() if a.coordinator)
