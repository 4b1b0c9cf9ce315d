"""littlekit's packages stand on floors: a module imports only from its own package or from a
lower floor, and no modules import each other, directly or round a loop.

Every import counts, at module level or inside a function: a lazy import still ties the modules
together and can still hide a cycle. The floors are the README's "Package floors"; a new
top-level module or package needs a floor here before it can import anything. And no module is
over 700 lines but the curriculum's unit catalogues.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "littlekit"

# Lowest first. The shared leaves (the top-level modules) share floor 0 and may import each other.
LEAVES = ("littlekit", "argtypes", "config", "grades", "io", "processes", "progress", "readability",
          "paper", "runs", "stats", "swap", "text")  # fmt: skip
PACKAGES = ("judge", "databuild", "filter", "fit", "curriculum", "lm", "evals", "experiments", "analysis",
            "course", "cli")  # fmt: skip
FLOORS: dict[str, int] = {**dict.fromkeys(LEAVES, 0), **{name: i for i, name in enumerate(PACKAGES, 1)}}


def module_files() -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, whether it is a package's __init__)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


MODULES = module_files()


def resolve(name: str) -> str | None:
    """The littlekit module an imported dotted name lives in (its longest module prefix)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in MODULES:
            return candidate
    return None


def imports_of(module: str) -> dict[str, int]:
    """littlekit modules `module` imports (anywhere in it) -> the first line that does."""
    path, is_package = MODULES[module]
    here = module.split(".") if is_package else module.split(".")[:-1]
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(here[: len(here) - node.level + 1] + ([base] if base else []))
            # `from a.b import c` imports the module a.b.c when there is one, else a name of a.b
            names = [base + "." + a.name if base + "." + a.name in MODULES else base for a in node.names]
        else:
            continue
        for name in names:
            target = resolve(name) if name.split(".")[0] == "littlekit" else None
            if target is not None and target != module:
                found.setdefault(target, node.lineno)
    return found


GRAPH = {module: imports_of(module) for module in MODULES}


def package_of(module: str) -> str:
    """The floor a module stands on: its top-level package, or the module itself for a leaf."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, {}):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
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

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_scan_sees_module_and_function_level_imports():
    # fit.command imports the recipe steps at module level, curriculum.units its unit catalogues in a function
    assert "littlekit.fit.recipe_encoder" in GRAPH["littlekit.fit.command"]
    assert "littlekit.curriculum.k5_units" in GRAPH["littlekit.curriculum.units"]
    assert cycles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == [["a", "b", "c"]]


def test_every_top_level_module_and_package_has_a_floor():
    missing = sorted({package_of(m) for m in MODULES} - set(FLOORS))
    assert not missing, f"give these a floor in FLOORS and the README's Package floors: {missing}"


def test_no_module_imports_a_package_above_its_floor():
    upward = [
        f"{MODULES[module][0].relative_to(ROOT)}:{line} -> {target}"
        for module, targets in GRAPH.items()
        for target, line in targets.items()
        if FLOORS[package_of(target)] > FLOORS[package_of(module)]
    ]
    assert not upward, "imports above the importer's floor:\n" + "\n".join(upward)


def test_no_import_cycles_between_modules():
    found = cycles(GRAPH)
    assert not found, "modules that import each other: " + "; ".join(" <-> ".join(c) for c in found)


def test_no_module_is_over_700_lines_but_the_unit_catalogues():
    # the catalogues are long lists of small, independent unit generators; anything else splits by job
    long = {
        str(path.relative_to(ROOT)): n
        for path, _ in MODULES.values()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > 700
        and not (path.parent.name == "curriculum" and path.name.endswith("_units.py"))
    }
    assert not long, f"split these by job (re-export the old names): {long}"
