"""edgebnn's modules import each other without circles: in the graph of their imports (every
``import`` / ``from ... import`` of a module, at its top or inside a function, resolved to the
edgebnn module it names: the submodule for ``from package import submodule``, else the module
the names come from; an old path such as ``edgebnn.layers`` to its home) no module reaches itself.
A circle hidden in a function still ties the two modules together: neither can be read,
tested or moved alone."""

import ast
import pathlib

import edgebnn

PACKAGE = pathlib.Path(edgebnn.__file__).resolve().parent


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, pathlib.Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def is_module(name: str, known) -> bool:
    return name in known or name.removeprefix("edgebnn.") in edgebnn._MOVED


def imports_of(name: str, path: pathlib.Path, known: dict) -> set[str]:
    """The edgebnn modules that importing module ``name`` imports at once (the resolved targets)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module
            submodules = {f"{source}.{alias.name}" for alias in node.names if is_module(f"{source}.{alias.name}", known)}
            # ``from package import submodule`` imports the submodule; other names come from the package
            targets |= submodules
            if len(submodules) < len(node.names):
                targets.add(source)
    moved = {f"edgebnn.{old}": f"edgebnn.{new}" for old, new in edgebnn._MOVED.items()}
    return {moved.get(target, target) for target in targets if moved.get(target, target) in known} - {name}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


# estimate's fit() runs the package's own steps (_load, _prepare, _estimate) and the package
# exports fit: left while estimate/ is being reworked; breaking it removes this line
KNOWN = {("edgebnn.estimate.fit", "edgebnn.estimate")}


def test_the_import_graph_is_read():
    graph = import_graph()
    assert len(graph) > 100
    assert "edgebnn.graph" in graph["edgebnn.emulate"]
    assert "edgebnn.training.quantizers" in graph["edgebnn.training.layers"]
    # the old paths are followed to the modules' homes
    assert {"edgebnn.training.layers", "edgebnn.training.constraints"} <= graph["edgebnn"]


def test_edgebnns_modules_import_each_other_without_circles():
    graph = import_graph()
    for importer, imported in KNOWN:
        graph[importer].discard(imported)
    cycle = find_cycle(graph)
    assert cycle is None, "an import circle: " + " -> ".join(cycle)
