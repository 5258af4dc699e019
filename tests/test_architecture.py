"""The import rules of docs/architecture.md, checked with `ast` over the source files.

Every import counts, including those under `if TYPE_CHECKING:` and inside functions: a circle through type
hints is still a circle for a reader. Each rule names the rooms a room may import from (its own included);
the pure state machine additionally imports no I/O module, and no module imports another's private name.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCE_FOLDERS = ("protocol", "server", "assignors", "pipeline", "membership", "share")

#: room (a module or package, as `groupcoord.<room>`) -> the rooms it may import from
ALLOWED: dict[str, tuple[str, ...]] = {
    "protocol": ("protocol",),
    "assignors": ("assignors", "protocol"),
    "pipeline": ("pipeline",),
    "membership": ("membership", "protocol"),
    # the asyncio share consumer: the wire codecs and membership's client connection, never the server
    "share": ("share", "membership.connection", "membership.member", "protocol"),
    "server.coordinator": ("server.coordinator", "protocol"),
    "server.storage": ("server.storage", "server.coordinator.records"),
    "server.log": ("server.log", "protocol"),
    "server.timers": (),
    # the journal room: the writer, the Parquet roll of closed files, its CLI, the lag snapshots
    "server.journal": ("server.journal",),
    "server.journal.writer": ("server.journal.writer", "server.coordinator"),
    # the Parquet roll of closed journal files: below the broker, above the journal writer
    "server.journal.roll": ("server.journal.roll", "server.journal.writer", "server.coordinator"),
    "server.journal.cli": ("server.journal.cli", "server.journal.roll"),
    # snapshots of committed offsets and log ends, on a timer, into the journal
    "server.journal.lag_snapshots": (
        "server.journal.lag_snapshots",
        "server.journal.writer",
        "server.coordinator",
        "server.log",
        "server.timers",
    ),
    "server.runtime": (
        "server.runtime",
        "server.coordinator",
        "server.journal.writer",
        "server.storage",
        "server.timers",
        "protocol",
    ),
    "server.configs": ("server.configs", "server.log.config", "protocol"),
    # cluster mode: leases and takeover drive the state machine through the runtime, writes through storage
    "server.cluster": (
        "server.cluster",
        "server.coordinator",
        "server.runtime",
        "server.storage",
        "server.log",
        "protocol",
    ),
    "server.topic_view": ("server.topic_view", "server.log"),
    # the transaction coordinator: a pure state machine and a service over the store and the log
    "server.txn": ("server.txn", "server.coordinator.records", "server.log", "server.storage", "protocol"),
    # KIP-932 share partitions beside the log: pure state machines and a service over the store and the log
    "server.share": (
        "server.share",
        "server.coordinator.records",
        "server.coordinator.modern.share.config",
        "server.log",
        "server.storage",
        "server.timers",
        "protocol",
    ),
    # the narrow interface handlers get instead of the Broker: only the layers below the handlers
    "server.services": (
        "server.services",
        "server.config",
        "server.coordinator",
        "server.runtime",
        "server.log",
        "server.topic_view",
        "server.configs",
        "server.txn",
        "server.share",
        "server.security.authorizer",
        "protocol",
    ),
    # Kafka's listener settings, parsed; pure (the broker binds the sockets)
    "server.net.listeners": ("server.net.listeners",),
    # TLS, SASL, credentials (issue 18): below the broker, above dispatch and the protocol
    "server.security": (
        "server.security",
        "server.config",
        "server.net.listeners",
        "server.net.dispatch",
        "protocol",
    ),
    "server.net.dispatch": ("server.net.dispatch", "server.services", "server.net.listeners", "protocol"),
    "server.apis": (
        "server.apis",
        "server.security.authorizer",
        "server.security.scram",
        "server.net.dispatch",
        "server.services",
        "server.coordinator",
        "server.log",
        "server.configs",
        "server.txn",
        "server.share",
        "protocol",
    ),
    # the web console: read-only views over the state machine, the log, transactions and cluster leases
    "server.console": (
        "server.console",
        "server.coordinator",
        "server.log",
        "server.txn",
        "server.cluster",
        "server.security",
        "server.share",
        "protocol",
    ),
    "server.net": ("server.net",),
    "server.net.network": ("server.net.network", "server.net.dispatch", "server.net.listeners", "protocol"),
    # metrics, probes and `groupcoord groups`: read-only over the machine, the log and the share partitions
    "server.ops": (
        "server.ops",
        "server.coordinator",
        "server.log",
        "server.net.listeners",
        "server.share",
        "protocol",
    ),
    # the opt-in test controls: virtual clock, faults, recording, observation, over the runtime and dispatch
    "server.control": (
        "server.control",
        "server.apis",
        "server.coordinator",
        "server.journal.writer",
        "server.net.dispatch",
        "server.net.network",
        "server.runtime",
        "server.timers",
        "protocol",
    ),
    # the configuration: Kafka's flags and env vars (options), validated into the layers' configs
    "server.config": (
        "server.config",
        "server.options",
        "server.configs",
        "server.coordinator",
        "server.journal.roll",
        "server.net.listeners",
        "server.storage",
    ),
    "server.options": ("server.options",),
    "server.logging_setup": (),
}

#: the wiring: these modules build everything and may import anything (but not in a circle: see cycles())
WIRING = ("server", "server.__main__", "server.broker", "server.cli", "server.cluster_setup")

DOC = ROOT / "docs" / "architecture.md"
README = ROOT / "README.md"

#: what "no I/O" means for the pure state machine
IO_MODULES = frozenset(
    {"asyncio", "sqlite3", "socket", "selectors", "select", "ssl", "threading", "concurrent", "subprocess",
     "os", "io", "pathlib", "shutil", "time", "structlog", "uvloop", "logging"}
)  # fmt: skip


def module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def room_of(module: str) -> str | None:
    """The most specific room containing `module` (None: not governed by a rule)."""
    best = None
    for room in ALLOWED:
        if (module == room or module.startswith(room + ".")) and (best is None or len(room) > len(best)):
            best = room
    return best


def inside(module: str, rooms: tuple[str, ...]) -> bool:
    return any(module == r or module.startswith(r + ".") for r in rooms)


def imports(tree: ast.AST) -> Iterator[tuple[int, str, list[str]]]:
    """(line, imported module, names taken from it) for every import statement, however nested."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                yield node.lineno, "." * node.level + (node.module or ""), [a.name for a in node.names]
            else:
                yield node.lineno, node.module or "", [a.name for a in node.names]


def violations(sources: dict[str, str]) -> list[str]:
    """Broken rules in `sources` ({path relative to the repository root: text})."""
    out: list[str] = []
    for rel, text in sources.items():
        path = Path(rel)
        module = module_name(ROOT / path, ROOT)
        room = room_of(module)
        for line, target, names in imports(ast.parse(text, rel)):
            where = f"{rel}:{line}"
            if target.startswith("."):
                out.append(f"{where}: relative import {target} (write groupcoord.…)")
                continue
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private:
                out.append(f"{where}: imports private name(s) {private} from {target}")
            top = target.split(".")[0]
            if top == "groupcoord":
                # `from groupcoord import server` imports the room `server`; otherwise the module itself
                inners = names if target == "groupcoord" else [target[len("groupcoord.") :]]
                for inner in inners:
                    if room is not None and not inside(inner, ALLOWED[room]):
                        out.append(f"{where}: {room} may not import {inner}")
            elif room == "server.coordinator" and top in IO_MODULES:
                out.append(f"{where}: the pure state machine imports the I/O module {target}")
    return out


def resolve(target: str, names: list[str], modules: set[str]) -> list[str]:
    """The modules of `modules` an import statement loads: `from a.b import c` is `a.b.c` when that is a module,
    else `a.b`; a dotted name that is no module counts as its longest prefix that is one."""
    if target == "groupcoord":
        return [n for n in names if n in modules]
    if not target.startswith("groupcoord."):
        return []
    base = target[len("groupcoord.") :]
    out = []
    for name in names or [""]:
        candidate = f"{base}.{name}" if name else base
        while candidate and candidate not in modules:
            candidate = candidate.rpartition(".")[0]
        if candidate:
            out.append(candidate)
    return out


def import_graph(sources: dict[str, str]) -> dict[str, set[str]]:
    """module -> the groupcoord modules it imports, every import counted (TYPE_CHECKING and in functions)."""
    modules = {module_name(ROOT / Path(rel), ROOT): text for rel, text in sources.items()}
    names = set(modules)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, text in modules.items():
        for _, target, taken in imports(ast.parse(text, module)):
            graph[module].update(t for t in resolve(target, taken, names) if t != module)
    return graph


def cycles(sources: dict[str, str]) -> list[list[str]]:
    """The import circles among `sources`: each strongly connected component of more than one module
    (Tarjan's algorithm), sorted."""
    graph = import_graph(sources)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def source_files() -> dict[str, str]:
    return {
        str(p.relative_to(ROOT)): p.read_text()
        for folder in SOURCE_FOLDERS
        for p in sorted((ROOT / folder).rglob("*.py"))
    }


def test_the_source_follows_the_import_rules() -> None:
    found = violations(source_files())
    assert found == [], "\n".join(found)


def test_no_import_circle_among_groupcoord_modules_even_through_type_hints() -> None:
    found = cycles(source_files())
    assert found == [], "import circles: " + "; ".join(" <-> ".join(c) for c in found)


def test_no_handler_imports_the_broker() -> None:
    """Handlers get `RequestContext.services` (server.services.HandlerServices), never the whole Broker."""
    graph = import_graph(source_files())
    offenders = {
        m: sorted(graph[m]) for m in graph if m.startswith("server.apis") and "server.broker" in graph[m]
    }
    assert offenders == {}


def test_the_cycle_checker_finds_a_circle_through_type_checking_imports() -> None:
    sources = {
        "server/net/dispatch.py": "if TYPE_CHECKING:\n    from groupcoord.server.net.network import Connection",
        "server/net/network.py": "from groupcoord.server.net import dispatch",
        "server/broker.py": "from groupcoord.server.net.network import Connection",
    }
    assert cycles(sources) == [["server.net.dispatch", "server.net.network"]]


def test_the_cycle_checker_finds_a_circle_through_function_level_imports() -> None:
    sources = {
        "server/a.py": "def f():\n    import groupcoord.server.b",
        "server/b.py": "from groupcoord.server.c import x",
        "server/c.py": "from groupcoord.server.a import y",
    }
    assert cycles(sources) == [["server.a", "server.b", "server.c"]]


def test_the_cycle_checker_accepts_a_one_way_chain() -> None:
    sources = {
        "server/apis/groups.py": "from groupcoord.server.net.dispatch import then",
        "server/net/dispatch.py": "if TYPE_CHECKING:\n    from groupcoord.server.services import HandlerServices",
        "server/broker.py": "from groupcoord.server.apis import groups\nfrom groupcoord.server.net.dispatch import x",
        "server/services.py": "from groupcoord.server.runtime import Step",
        "server/runtime.py": "import asyncio",
    }
    assert cycles(sources) == []


def test_every_module_is_in_a_room_with_a_rule_or_is_wiring() -> None:
    unruled = [m for m in sorted(import_graph(source_files())) if room_of(m) is None and m not in WIRING]
    assert unruled == [], f"modules with no rule in ALLOWED (nor in WIRING): {unruled}"


def doc_rules(text: str) -> dict[str, set[str] | None]:
    """docs/architecture.md's rooms table: room -> the rooms it may import besides itself (None: anything).

    A row's first cell names its rooms in backticks, as paths (`server/net/dispatch.py`, `server/apis/`) or
    dotted names; its last cell the rooms it may import, in backticks, or `anything` / `nothing`."""
    section = text.split("\n## The rooms\n", 1)[1].split("\n## ", 1)[0]
    rules: dict[str, set[str] | None] = {}
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rooms = [
            t.rstrip("/").removesuffix(".py").replace("/", ".") for t in re.findall(r"`([^`]+)`", cells[0])
        ]
        last = cells[-1]
        deps: set[str] | None = (
            None if last.startswith("anything") else set(re.findall(r"`([a-z_.]+)`", last))
        )
        for room in rooms:
            rules[room] = deps
    return rules


def test_the_architecture_doc_says_what_the_rules_say() -> None:
    """One source for the room rules: every room of ALLOWED (and the wiring) has its row in
    docs/architecture.md, and each row lists exactly the rooms the rule allows (besides its own)."""
    documented = doc_rules(DOC.read_text())
    folders = set(SOURCE_FOLDERS)
    documented = {r: d for r, d in documented.items() if r.split(".")[0] in folders}
    expected: dict[str, set[str] | None] = {r: set(a) - {r} for r, a in ALLOWED.items()}
    expected.update(dict.fromkeys(WIRING, None))
    missing = sorted(set(expected) - set(documented))
    extra = sorted(set(documented) - set(expected))
    wrong = {
        r: (sorted(documented[r] or ()), sorted(e or ()))
        for r, e in expected.items()
        if r in documented and documented[r] != e
    }
    assert (missing, extra, wrong) == ([], [], {}), (
        f"missing rows {missing}, rows without a rule {extra}, differing (doc, test) {wrong}"
    )


def test_the_readme_map_names_every_package_folder_and_only_paths_that_exist() -> None:
    """README's "Map of the code": every installed top-level folder and every package of `server/` has a row,
    and every path its rows name exists."""
    section = README.read_text().split("\n## Map of the code\n", 1)[1].split("\n## ", 1)[0]
    named = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            named.update(re.findall(r"`([^`]+)`", line.strip().strip("|").split("|")[0]))
    assert [p for p in sorted(named) if not (ROOT / p).exists()] == []
    folders = {f"{folder}/" for folder in SOURCE_FOLDERS if folder != "server"} | {
        "testing/"
    }  # server: by part
    folders |= {f"server/{p.parent.name}/" for p in (ROOT / "server").glob("*/__init__.py")}
    assert sorted(folders - named) == []


def test_every_room_in_the_rules_exists() -> None:
    modules = {module_name(ROOT / p, ROOT) for p in source_files()}
    for room in ALLOWED:
        assert any(inside(m, (room,)) for m in modules), room


@pytest.mark.parametrize(
    ("path", "text", "expected"),
    [
        ("protocol/x.py", "from groupcoord.server import broker", "protocol may not import server"),
        ("protocol/x.py", "if TYPE_CHECKING:\n    import groupcoord.server.net.dispatch", "may not import server.net.dispatch"),
        ("assignors/x.py", "from groupcoord.server.coordinator import types", "assignors may not import"),
        ("pipeline/x.py", "def f():\n    from groupcoord.protocol import api", "pipeline may not import protocol"),
        ("protocol/x.py", "from groupcoord import server", "protocol may not import server"),
        ("server/coordinator/x.py", "import asyncio", "imports the I/O module asyncio"),
        ("server/coordinator/x.py", "from groupcoord.server.runtime import GroupRuntime", "may not import server.runtime"),
        ("server/storage/x.py", "from groupcoord.server.coordinator.group import ClassicGroup", "server.storage may not"),
        ("server/apis/x.py", "from groupcoord.server.broker import Broker", "server.apis may not import server.broker"),
        ("server/broker.py", "from groupcoord.server.apis.groups import _parked", "private name(s) ['_parked']"),
        ("server/x.py", "from .runtime import GroupRuntime", "relative import"),
    ],
)  # fmt: skip
def test_the_checker_reports_each_kind_of_violation(path: str, text: str, expected: str) -> None:
    found = violations({path: text})
    assert len(found) == 1 and expected in found[0], found


def test_the_checker_accepts_allowed_imports() -> None:
    assert (
        violations(
            {
                "server/coordinator/x.py": "import uuid\nfrom groupcoord.protocol.errors import ErrorCode",
                "server/apis/x.py": "from groupcoord.server.coordinator import types",
                "server/broker.py": "from groupcoord.server.runtime import GroupRuntime",
            }
        )
        == []
    )
