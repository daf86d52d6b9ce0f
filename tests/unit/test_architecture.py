"""The layer order in docs/ARCHITECTURE.md is the code's: no upward import, no import cycle between packages, no
import of another package's private module, and the top-level modules kept few.

The test reads the layer table of docs/ARCHITECTURE.md ("## Layers": one row per layer, bottom first, the packages
and modules of each layer in backticks), so the page and the code cannot drift apart: a new package must be given a
layer there, and an import that climbs is named with its file and line. Function-local imports count like any other:
an upward import inside a function is still an upward import. Plugins found through a registry (by module name, at
run time) are not imports.
"""

from __future__ import annotations

import ast
import functools
import re
from collections import defaultdict
from pathlib import Path

from _sources import source_files, source_tree

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "failforge"
ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"
MAX_TOP_LEVEL_MODULES = 10


def _layers() -> list[tuple[str, list[str]]]:
    """(layer, its packages and modules as dotted names under failforge), bottom layer first, from the page's table."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or cells[0] in ("layer", "") or set(cells[0]) <= {"-"}:
            continue
        names = [n.strip("/").removesuffix(".py").replace("/", ".") for n in re.findall(r"`([^`]+)`", cells[1])]
        rows.append((cells[0], names))
    assert rows, "docs/ARCHITECTURE.md has no layer table under '## Layers'"
    return rows


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every failforge module a file imports (absolute imports; ``from failforge.x import y`` may name a submodule)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(source_tree(path)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("failforge")]
        elif (
            isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("failforge") and not node.level
        ):
            found.append((node.lineno, node.module))
            found += [
                (node.lineno, f"{node.module}.{a.name}")
                for a in node.names
                if (SRC.parent / f"{node.module}.{a.name}".replace(".", "/")).exists()
                or (SRC.parent / (f"{node.module}.{a.name}".replace(".", "/") + ".py")).exists()
            ]
    return found


def _owner(module: str, table: list[tuple[int, str]]) -> tuple[int, str] | None:
    """The layer of a module: the longest table entry it is, or lies under."""
    best: tuple[int, str] | None = None
    for index, name in table:
        full = f"failforge.{name}"
        if (module == full or module.startswith(full + ".")) and (best is None or len(name) > len(best[1])):
            best = (index, name)
    return best


def _unit(module: str, table: list[tuple[int, str]]) -> str:
    owner = _owner(module, table)
    return owner[1] if owner else module


@functools.cache
def _graph() -> tuple[list[tuple[str, list[str]]], list[tuple[int, str]], dict[str, list[tuple[int, str]]]]:
    layers = _layers()
    table = [(i, name) for i, (_, names) in enumerate(layers) for name in names]
    modules = {_module_name(p): _imports(p) for p in source_files()}
    return layers, table, modules


def test_every_module_has_a_layer_in_the_table():
    _, table, modules = _graph()
    missing = sorted(m for m in modules if m != "failforge" and _owner(m, table) is None)
    assert not missing, f"give these a layer in docs/ARCHITECTURE.md's table: {missing}"


def test_no_module_imports_from_a_layer_above_its_own():
    layers, table, modules = _graph()
    upward = []
    for module, imports in modules.items():
        mine = _owner(module, table)
        if mine is None:
            continue
        for line, target in imports:
            theirs = _owner(target, table)
            if theirs is not None and theirs[0] > mine[0]:
                upward.append(f"{module}:{line} ({layers[mine[0]][0]}) imports {target} ({layers[theirs[0]][0]})")
    assert not upward, "upward imports:\n" + "\n".join(sorted(upward))


def test_no_cycle_between_packages():
    _, table, modules = _graph()
    edges: dict[str, set[str]] = defaultdict(set)
    for module, imports in modules.items():
        for _, target in imports:
            a, b = _unit(module, table), _unit(target, table)
            if a != b and not b.startswith(a + ".") and not a.startswith(b + "."):
                edges[a].add(b)
    cycles = []
    for start in sorted(edges):  # a depth-first walk from every unit: a path back to it is a cycle
        stack = [(start, [start])]
        seen: set[str] = set()
        while stack:
            node, path = stack.pop()
            for nxt in sorted(edges.get(node, ())):
                if nxt == start:
                    cycles.append(" -> ".join([*path, start]))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
    assert not cycles, "import cycles between packages:\n" + "\n".join(sorted(set(cycles))[:10])


def test_no_import_of_another_packages_private_module():
    _, table, modules = _graph()
    private = []
    for module, imports in modules.items():
        for line, target in imports:
            parts = target.split(".")
            hidden = [i for i, p in enumerate(parts) if p.startswith("_") and not p.startswith("__")]
            if hidden and not (module + ".").startswith(".".join(parts[: hidden[0]]) + "."):
                private.append(f"{module}:{line} imports {target}")
    assert not private, "import the package's face instead:\n" + "\n".join(sorted(private))


def test_top_level_modules_are_few():
    top = sorted(p.stem for p in SRC.glob("*.py") if p.stem not in ("__init__", "__main__"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, f"{len(top)} top-level modules (at most {MAX_TOP_LEVEL_MODULES}): {top}"
