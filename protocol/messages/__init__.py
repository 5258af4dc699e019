"""One module per API. Every `@message` class in this package is found here automatically."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

ALL_MESSAGES: list[type] = []
REQUESTS: dict[int, type] = {}
RESPONSES: dict[int, type] = {}

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    _module = importlib.import_module(f"{__name__}.{_info.name}")
    for _obj in vars(_module).values():
        if isinstance(_obj, type) and getattr(_obj, "KIND", None) in ("request", "response"):
            _msg: Any = _obj  # a @message class: KIND and API_KEY are set by the decorator
            if _obj.__module__ != _module.__name__:
                continue
            ALL_MESSAGES.append(_obj)
            (REQUESTS if _msg.KIND == "request" else RESPONSES)[_msg.API_KEY] = _obj
