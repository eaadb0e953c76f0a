"""The import graph of `oprag_pipeline`, read from the source with `ast`: every `import` and `from … import`,
including those inside functions (which a fresh interpreter's `sys.modules` misses until the function runs), and
its cycles (strongly connected components of more than one module).

Imports under `if TYPE_CHECKING:` are left out by default: they never execute, so they cannot close a cycle at
run time (`--type-checking` counts them too). An import names the most specific module it reaches: `from a import b`
is an edge to `a.b` when that is a module, else to `a`. A package's `__init__` importing its own submodules is
not an edge back from them (Python loads the parent package first, by design).

    .venv/bin/python -m benchmarks.import_graph            # prints the cycles; exit status 1 if there is one
    .venv/bin/python benchmarks/import_graph.py --edges    # also every edge that lies on a cycle, with its line
    .venv/bin/python benchmarks/import_graph.py --stages   # also cycles between top-level parts (not in the status)

`oprag_pipeline_tests/pipeline/test_import_direction.py` calls `import_graph` and `cycles` and asserts there is none.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "oprag_pipeline"


@dataclass(frozen=True)
class Edge:
    """One import: `source` imports `target` at `line`, at module level or inside a function (`nested`)."""

    source: str
    target: str
    line: int
    nested: bool


def module_files(root: Path = ROOT, package: str = PACKAGE) -> dict[str, Path]:
    """Dotted module name → file for every module of the package (a package's `__init__.py` is the package)."""
    modules = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, type_checking: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import node of the tree and whether it sits inside a function, skipping `if TYPE_CHECKING:` bodies
    unless asked."""

    def visit(node: ast.AST, nested: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, nested
            elif isinstance(child, ast.If) and _is_type_checking(child.test) and not type_checking:
                for other in child.orelse:
                    yield from visit_one(other, nested)
            else:
                inner = nested or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
                yield from visit(child, inner)

    def visit_one(node: ast.AST, nested: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, nested
        else:
            yield from visit(node, nested)

    yield from visit(tree, False)


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module a `from` import names (relative imports resolved against `module`)."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def import_graph(root: Path = ROOT, package: str = PACKAGE, *, type_checking: bool = False) -> dict[str, list[Edge]]:
    """Module → its imports of other modules of the package (module-level and in-function alike)."""
    files = module_files(root, package)
    graph: dict[str, list[Edge]] = {name: [] for name in files}
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node, nested in _imports(tree, type_checking):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = _resolve(name, path.name == "__init__.py", node)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            for target in dict.fromkeys(targets):
                # `import a.b.c` names a.b.c; a name outside the package (or a package folder without
                # `__init__.py`) is found at its nearest enclosing module, if any
                while target and target not in files:
                    target = target.rpartition(".")[0]
                if target and target != name and target.split(".")[0] == package:
                    graph[name].append(Edge(name, target, node.lineno, nested))
    return graph


def cycles(graph: Mapping[str, list[Edge]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    for start in sorted(graph):
        if start in index:
            continue
        # iterative Tarjan: (node, iterator over its successors)
        work = [(start, iter(sorted({e.target for e in graph.get(start, [])})))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted({e.target for e in graph.get(nxt, [])}))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found, key=lambda c: (-len(c), c))


def cycle_edges(graph: Mapping[str, list[Edge]], component: list[str]) -> list[Edge]:
    """The imports that stay inside one component (the ones to cut)."""
    inside = set(component)
    return [e for m in component for e in graph.get(m, []) if e.target in inside]


def stage_graph(graph: Mapping[str, list[Edge]], package: str = PACKAGE) -> dict[str, list[Edge]]:
    """The same imports between top-level parts of the package (`oprag_pipeline.index`, `oprag_pipeline.resources`,
    …): a cycle here is a stage importing a later one, even where no module imports itself back."""

    def part(module: str) -> str:
        return ".".join(module.split(".")[:2])

    stages: dict[str, list[Edge]] = {}
    for module, edges in graph.items():
        stages.setdefault(part(module), [])
        for e in edges:
            if part(e.target) != part(module):
                stages[part(module)].append(e)
    return {name: [Edge(e.source, part(e.target), e.line, e.nested) for e in edges] for name, edges in stages.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--type-checking", action="store_true", help="count `if TYPE_CHECKING:` imports too")
    parser.add_argument("--edges", action="store_true", help="print every import that lies on a cycle")
    parser.add_argument(
        "--stages", action="store_true", help="also print cycles between top-level parts (informative only)"
    )
    args = parser.parse_args(argv)
    graph = import_graph(type_checking=args.type_checking)
    edges = [e for es in graph.values() for e in es]
    nested = sum(e.nested for e in edges)
    print(f"{len(graph)} modules, {len(edges)} imports within {PACKAGE} ({nested} inside functions)")
    if args.stages:
        stages = stage_graph(graph)
        _print_cycles("stage", stages, cycles(stages), edges=args.edges)
    found = cycles(graph)
    _print_cycles("module", graph, found, edges=args.edges)
    return 1 if found else 0


def _print_cycles(unit: str, graph: Mapping[str, list[Edge]], found: list[list[str]], *, edges: bool) -> None:
    if not found:
        print(f"no {unit} cycle")
        return
    print(f"{len(found)} {unit} cycle(s):")
    for component in found:
        print(f"- {len(component)} {unit}s: {', '.join(component)}")
        if edges:
            for e in cycle_edges(graph, component):
                where = "in a function" if e.nested else "module level"
                print(f"    {e.source}:{e.line} -> {e.target} ({where})")


if __name__ == "__main__":
    sys.exit(main())
