"""Imports go one way: read from the source (every `import`, at the top of a module or inside a function), not from
what happens to be loaded. No cycle among backend/importers' modules; backend/trace imports nothing above it (the
engine, the models and the problem collector are below it; the driver, planners, sweeps, store, API, ledger and
importers build on it); and no cycle among backend's packages."""
import ast
from pathlib import Path

import pytest

BACKEND = Path(__file__).resolve().parent.parent / "backend"
ABOVE_THE_TRACE = {"driver", "planner", "sweeps", "store", "api", "ledger", "importers"}


def module_name(path):
    parts = path.relative_to(BACKEND.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path):
    """The backend modules `path` imports, by their dotted names (a `from package import name` names the package's
    module when there is one)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in names if name.startswith("backend.") and name in MODULES}


MODULES = {module_name(path): path for path in BACKEND.rglob("*.py")}
GRAPH = {name: imports_of(path) - {name} for name, path in MODULES.items()}


def cycles(graph):
    """Every strongly connected component of more than one node (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def package_of(module):
    """backend.trace.document -> trace; backend.problems -> problems (a top-level module is its own package)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def test_the_parser_sees_a_known_import_inside_a_function():
    # the checker itself can fail: backend/api/traces.py imports the intake at its top
    assert "backend.trace.intake" in GRAPH["backend.api.traces"]


def test_no_import_cycle_inside_the_importers():
    importers = {name: {t for t in targets if t.startswith("backend.importers")}
                 for name, targets in GRAPH.items() if name.startswith("backend.importers")}
    assert cycles(importers) == []


@pytest.mark.parametrize("module", sorted(name for name in MODULES if name.startswith("backend.trace")))
def test_the_trace_imports_nothing_above_it(module):
    above = sorted(t for t in GRAPH[module] if package_of(t) in ABOVE_THE_TRACE)
    assert above == [], f"{module} imports {above}, which build on backend.trace"


def test_backends_packages_import_one_way():
    packages = {}
    for name, targets in GRAPH.items():
        packages.setdefault(package_of(name), set()).update(package_of(t) for t in targets)
    for package, targets in packages.items():
        targets.discard(package)
    assert cycles(packages) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
