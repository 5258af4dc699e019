"""Codec tests: make the helper modules in this directory importable by their bare names."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

# kafka-python (an oracle) builds its message classes at import time with deprecated importlib.resources
# calls; import it once here, quietly, instead of printing ~200 DeprecationWarnings per run.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.protocol.admin
    import kafka.protocol.consumer
    import kafka.protocol.metadata
    import kafka.protocol.producer  # noqa: F401
