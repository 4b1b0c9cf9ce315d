"""One import path per name: `from littlekit.X import name` takes `name` from the module that
defines it (or a submodule of X), no littlekit module re-exports another's names, and littlekit's
modules import each other without a cycle.

No package `__init__.py` gathers its submodules' names (no facades): a name has one import path.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "littlekit"

def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}
TREES = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in MODULES.items()}


def _defined(tree: ast.Module) -> set[str]:
    """The names a module binds at module level itself: defs, classes and assignments (also
    under a module-level if/try/with/for), not the names it imports."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.If, ast.Try, ast.With)):
            for sub in ast.walk(node):
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    names.add(sub.name)
                elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    names.add(sub.id)
    return names


DEFINED = {name: _defined(tree) for name, tree in TREES.items()}


def _sources() -> list[tuple[str, str]]:
    """(path, code) of every Python file and every notebook's code cells (magics dropped)."""
    out = []
    for base in ("littlekit", "tests", "benchmarks", "book/tools"):
        for path in sorted((ROOT / base).rglob("*.py")):
            out.append((str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")))
    for path in sorted((ROOT / "notebooks").rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in code.splitlines()]
        out.append((str(path.relative_to(ROOT)), "\n".join(lines)))
    return out


# a `from littlekit... import ...` statement, one line or parenthesised (parsing only these is fast)
IMPORT_RE = re.compile(r"^[ \t]*(from littlekit[\w.]* import (?:\([^)]*\)|[^\n]*))", re.M)


def _littlekit_imports(code: str):
    """(line, ImportFrom) of each `from littlekit... import` statement in `code`."""
    for match in IMPORT_RE.finditer(code):
        try:
            node = ast.parse(match.group(1)).body[0]
        except SyntaxError:  # prose in a docstring that reads like an import
            continue
        yield code.count("\n", 0, match.start(1)) + 1, node


def test_names_are_imported_from_the_module_that_defines_them():
    bad = []
    for where, code in _sources():
        for lineno, node in _littlekit_imports(code):
            if not (isinstance(node, ast.ImportFrom) and node.module in MODULES):
                continue
            for alias in node.names:
                if alias.name == "*" or f"{node.module}.{alias.name}" in MODULES:
                    continue  # a star import is test_no_module_re_exports_names's to judge
                if alias.name in DEFINED[node.module]:
                    continue
                bad.append(f"{where}:{lineno}: {alias.name} is not defined in {node.module}")
    assert not bad, "import these from the module that defines them:\n" + "\n".join(bad)


def _module_level(tree: ast.Module) -> list[ast.stmt]:
    """The statements run when the module loads: its body, and what a module-level if/try holds."""
    nodes: list[ast.stmt] = []
    for node in tree.body:
        nodes.append(node)
        if isinstance(node, (ast.If, ast.Try)):
            nodes.extend(n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom)))
    return nodes


def _used_names(tree: ast.Module) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def _gathers_names(path: Path, tree: ast.Module, node: ast.stmt) -> bool:
    """A package's __init__ importing a littlekit name it never uses: a facade gathering names for
    others to import from there (ruff does not flag unused imports in an __init__)."""
    if path.name != "__init__.py" or not isinstance(node, ast.ImportFrom) or not node.module:
        return False
    used = _used_names(tree)
    return node.module.startswith("littlekit") and any((a.asname or a.name) not in used for a in node.names)


def test_no_module_re_exports_names():
    bad = []
    for name, path in MODULES.items():
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in _module_level(TREES[name]):  # an import inside a function loads, it re-exports nothing
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            star = isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names)
            noqa = any("noqa: F401" in lines[i - 1] for i in range(node.lineno, node.end_lineno + 1))
            if star or noqa or _gathers_names(path, TREES[name], node):
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert not bad, "re-exports (import these names from their own modules instead):\n" + "\n".join(bad)


def _imports(tree: ast.Module) -> set[str]:
    """The littlekit modules a module imports when it is loaded: module-level imports (also under
    a module-level if/try), not those under `if TYPE_CHECKING:` nor inside functions."""
    deps: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        nodes = list(ast.walk(node)) if isinstance(node, (ast.If, ast.Try)) else [node]
        for sub in nodes:
            from_littlekit = isinstance(sub, ast.ImportFrom) and sub.level == 0
            if from_littlekit and (sub.module or "").startswith("littlekit"):
                for alias in sub.names:
                    full = f"{sub.module}.{alias.name}"
                    deps.add(full if full in MODULES else sub.module)
            elif isinstance(sub, ast.Import):
                deps.update(a.name for a in sub.names if a.name.startswith("littlekit"))
    return deps


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
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
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_littlekit_modules():
    graph = {name: {d for d in _imports(tree) if d in MODULES and d != name} for name, tree in TREES.items()}
    cycles = _cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)
