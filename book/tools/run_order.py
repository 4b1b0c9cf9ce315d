"""The book's run order, derived from the notebooks' source: which chapters each notebook reads.

`run_notebooks.UPSTREAM` is kept by hand; this module reads the same facts from the code so a test
can hold the two together (tests/book/test_run_order.py).

What a notebook *makes*: the product its `setup_chapter(run_name, "<product>", ...)` names, any
`runs.folder(run, "<product>")` it calls, and every product whose path lies inside one of those
folders (`pool_outcomes`, `validation/outcomes_pool.parquet`, is chapter 7's, whose product is
`validation/`). A few products no chapter names in `setup_chapter` are written by several chapters
in turn (`SHARED_PRODUCTS`: the filter's artifacts are chapter 3's fastText model, then chapter 4's
encoder, then chapter 6's word table); a notebook that reads one depends on every writer before it
in the book.

What a notebook *reads*: every product named by a string in `runs.path/require/folder/missing_note`
(`runs.folder` in a notebook is a write), and the products read by a `littlekit` function it calls
with a run folder as an argument (`recipes.run_labels(run, ...)`, `filter_outcomes(pool, run)`):
those are found the same way in the package's source, following the calls between its functions.

A notebook's upstream chapters are the chapters that make what it reads, itself left out.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[2]

# Products no chapter's setup_chapter names, written by these chapters in turn (in book order): a
# chapter that reads one runs after each of its writers that comes before it.
SHARED_PRODUCTS: dict[str, tuple[str, ...]] = {
    "labels": ("02",),  # the LLM judge writes them (chapter 3 builds them only when they are missing)
    "artifacts": ("03", "04", "06"),  # fastText model and AoA table, encoder, word table
    "source_labels_fit": ("03", "04"),  # the same fits on the source labels
}
RUNS_CALLS = {"path", "require", "folder", "missing_note"}  # littlekit.runs calls that take a product


@dataclass
class Uses:
    """What one notebook's (or function's) source says about run products."""

    makes: set[str] = field(default_factory=set)
    reads: set[str] = field(default_factory=set)
    calls: set[str] = field(default_factory=set)  # names of the functions called with a run folder


def _name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _product_arg(call: ast.Call, position: int, keyword: str) -> str | None:
    args = [a for a in call.args if not isinstance(a, ast.Starred)]
    node = args[position] if len(args) > position else None
    node = next((k.value for k in call.keywords if k.arg == keyword), node)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _is_runs_call(call: ast.Call) -> bool:
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr in RUNS_CALLS
        and isinstance(func.value, ast.Name)
        and func.value.id == "runs"
    )


def _passes_run(call: ast.Call) -> bool:
    """Whether a call hands on a run folder: an argument `run`, `*_run`, `<x>.run` or a runs call."""
    for arg in [*call.args, *(k.value for k in call.keywords)]:
        if isinstance(arg, ast.Starred):
            arg = arg.value
        if isinstance(arg, ast.Name) and (arg.id == "run" or arg.id.endswith("_run")):
            return True
        if isinstance(arg, ast.Attribute) and arg.attr == "run":
            return True
        if isinstance(arg, ast.Call) and _is_runs_call(arg):
            return True
    return False


def uses_of(tree: ast.AST, products: Iterable[str], notebook: bool) -> Uses:
    """The products `tree` makes and reads, and the functions it calls with a run folder.

    In a notebook, `runs.folder` and `setup_chapter` make; in the package every mention reads."""
    known = set(products)
    out = Uses()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _name(node.func)
        if _is_runs_call(node):
            product = _product_arg(node, 1, "name")
            if product in known:
                (out.makes if notebook and name == "folder" else out.reads).add(product)
        elif name == "setup_chapter":
            product = _product_arg(node, 1, "product")
            if product in known and notebook:
                out.makes.add(product)
        elif name is not None and _passes_run(node):
            out.calls.add(name)
    return out


def package_reads(package: Path, products: Iterable[str]) -> dict[str, set[str]]:
    """{function name: the products it reads, through the functions it calls} over a package's
    source (functions of one name in several modules are taken together)."""
    products = list(products)
    direct: dict[str, Uses] = {}
    for module in sorted(package.rglob("*.py")):
        tree = ast.parse(module.read_text(encoding="utf-8"), filename=str(module))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                uses = uses_of(node, products, notebook=False)
                entry = direct.setdefault(node.name, Uses())
                entry.reads |= uses.reads
                entry.calls |= uses.calls
    reads = {name: set(uses.reads) for name, uses in direct.items()}
    changed = True
    while changed:
        changed = False
        for name, uses in direct.items():
            for called in uses.calls:
                extra = reads.get(called, set()) - reads[name]
                if extra:
                    reads[name] |= extra
                    changed = True
    return {name: found for name, found in reads.items() if found}


def notebook_tree(path: Path) -> ast.Module:
    """The notebook's code cells as one module (IPython magics and shell lines left out)."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    body: list[ast.stmt] = []
    for index, cell in enumerate(cells):
        if cell.get("cell_type") != "code":
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
        body += ast.parse("\n".join(lines), filename=f"{path.name}, cell {index}").body
    return ast.Module(body=body, type_ignores=[])


def notebook_uses(path: Path, products: Iterable[str], helpers: Mapping[str, set[str]]) -> Uses:
    """What a notebook makes and reads, the products of the package functions it calls included."""
    uses = uses_of(notebook_tree(path), products, notebook=True)
    for called in uses.calls:
        uses.reads |= helpers.get(called, set())
    return uses


def _inside(inner: str, outer: str) -> bool:
    return inner != outer and PurePosixPath(outer) in PurePosixPath(inner).parents


def makers(
    uses: Mapping[str, Uses], layout: Mapping[str, str], shared: Mapping[str, Iterable[str]]
) -> dict[str, tuple[str, ...]]:
    """{product: the chapters that make it}: from the notebooks (their setup_chapter and
    runs.folder products, and the products inside those folders), then the shared products.
    `layout` is {product: its path under the run folder}. ValueError when a product has two
    sources (two chapters naming it, or a chapter and `shared`)."""
    out: dict[str, set[str]] = {}
    for number, found in uses.items():
        for made in found.makes:
            for product, where in layout.items():
                if product == made or _inside(where, layout[made]):
                    out.setdefault(product, set()).add(number)
    chapters = {p: m for p, m in out.items() if not all(n.startswith("ex") for n in m)}
    clashes = [p for p, m in chapters.items() if len({n for n in m if not n.startswith("ex")}) > 1]
    clashes += [p for p in shared if p in chapters]
    if clashes:
        raise ValueError(f"product(s) made in more than one place: {', '.join(sorted(set(clashes)))}")
    result = {p: tuple(sorted(m)) for p, m in out.items()}
    result.update({p: tuple(m) for p, m in shared.items()})
    return result


def derive(
    notebooks: Mapping[str, Path],
    layout: Mapping[str, str],
    package: Path | None,
    shared: Mapping[str, Iterable[str]] = SHARED_PRODUCTS,
) -> dict[str, tuple[str, ...]]:
    """{notebook number ("07", "ex07"): the chapters whose products it reads}, in number order.

    A product with one maker contributes that chapter; a shared product the writers that come
    before the reader in the book (for an exercise: before or equal to its chapter). KeyError
    when a notebook reads a product nothing makes."""
    helpers = package_reads(package, layout) if package is not None else {}
    uses = {number: notebook_uses(path, layout, helpers) for number, path in notebooks.items()}
    made_by = makers(uses, layout, shared)
    out: dict[str, tuple[str, ...]] = {}
    for number, found in uses.items():
        own = number[2:] if number.startswith("ex") else number
        reads: set[str] = set()
        for product in found.reads - found.makes:
            if product not in made_by:
                raise KeyError(f"{number}: reads run product {product!r}, which no notebook makes")
            writers = made_by[product]
            if product in shared:
                writers = tuple(w for w in writers if w < own or (w == own and number != own))
            reads |= {w for w in writers if w != number}
        out[number] = tuple(sorted(reads))
    return dict(sorted(out.items()))


def closure(graph: Mapping[str, Iterable[str]], number: str) -> set[str]:
    """Every chapter `number` waits for, directly or through its upstream chapters."""
    seen: set[str] = set()
    todo = list(graph.get(number, ()))
    while todo:
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            todo += list(graph.get(current, ()))
    return seen


def differences(
    table: Mapping[str, Iterable[str]], derived: Mapping[str, Iterable[str]], default=None
) -> list[str]:
    """Lines naming each disagreement between a hand-kept table and the derived graph.

    missing: the notebook reads a product of a chapter the table does not make it wait for (even
    through other chapters), so the build could start it too early; extra: the table's own entry
    makes it wait for a chapter whose products it does not read, directly or through what it reads.
    `default` gives the entry of a notebook the table does not list (run_notebooks.upstream_of: an
    exercise waits for its chapter); such entries are checked for missing chapters only."""
    lookup = default or (lambda number, graph: tuple(graph[number]))
    full = {number: tuple(lookup(number, table)) for number in derived}
    lines = []
    for number, reads in derived.items():
        missing = sorted(set(reads) - closure(full, number))
        extra = sorted(set(table.get(number, ())) - closure(derived, number))
        if missing:
            lines.append(f"{number}: reads products of {', '.join(missing)}, not upstream in the table")
        if extra:
            lines.append(f"{number}: the table lists {', '.join(extra)}, whose products it does not read")
    return lines


def book_notebooks(source: Path) -> dict[str, Path]:
    """{number: path} of the book's chapters and exercises."""
    from run_notebooks import chapter, find_notebooks

    return {chapter(path): path for path in find_notebooks(source)}


def book_order(source: Path | None = None) -> dict[str, tuple[str, ...]]:
    """The derived upstream chapters of every notebook of the book."""
    from littlekit import runs

    layout = {name: entry.path for name, entry in runs.PRODUCTS.items()}
    return derive(book_notebooks(source or ROOT / "notebooks"), layout, ROOT / "littlekit")
