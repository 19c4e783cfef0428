"""The package's layering (../shared/DESIGN.md, "What flows through it"), checked on its real import graph.

- The import-linter contracts in pyproject.toml hold: a module imports only from lower layers.
- There is no import circle between any two modules of accel_sim (run-time imports; an annotation-only import
  under `if TYPE_CHECKING:` is not a dependency).
- No module imports a private (`_name`) symbol from another package.
- A function-local import of an accel_sim module is allowed only where that module pulls a heavy dependency
  (ortools, pandas, matplotlib, onnx, scipy, simpy, dask, optuna) or a heavy accel_sim module, and says so in a
  comment on the import line or the line above.
"""
from __future__ import annotations

import ast
from pathlib import Path

import grimp
import networkx as nx
import pytest
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "accel_sim"


def test_import_linter_contracts_hold() -> None:
    """Every contract of [tool.importlinter] in pyproject.toml is kept (`lint-imports` prints the offenders)."""
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True) == 0


def test_no_import_circles() -> None:
    """No cycle in the module import graph of accel_sim (run-time imports)."""
    graph = grimp.build_graph("accel_sim", exclude_type_checking_imports=True)
    digraph = nx.DiGraph()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            if module != imported:
                digraph.add_edge(module, imported)
    # a package's __init__ importing its own submodules is how a package exposes them, not a circle
    cycles = [c for c in nx.simple_cycles(digraph, length_bound=12)
              if not any(b.startswith(a + ".") or a.startswith(b + ".") for a, b in zip(c, c[1:] + c[:1]))]
    assert not cycles, "import circles:\n" + "\n".join(" -> ".join(c + c[:1]) for c in cycles[:10])


def _python_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _package_of(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def test_no_private_names_imported_across_packages() -> None:
    """`from accel_sim.X import _private` only inside package X."""
    offenders = []
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("accel_sim."):
                target = node.module.split(".")[1]
                private = [a.name for a in node.names if a.name.startswith("_")]
                if private and target != _package_of(path):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.module} {private}")
    assert not offenders, "\n".join(offenders)


HEAVY_HINTS = ("ortools", "pandas", "matplotlib", "onnx", "scipy", "simpy", "dask", "optuna", "heavy",
               "first use", "lazily", "lazy")


@pytest.mark.parametrize("path", _python_files(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_function_local_imports_say_why(path: Path) -> None:
    """A function-local import says why it is deferred (a comment on its line or heading its block of imports)."""
    lines = path.read_text().splitlines()
    tree = ast.parse("\n".join(lines))
    bare = []
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(func):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                context = " ".join(lines[node.lineno - 1:node.end_lineno])
                above = node.lineno - 2  # a comment heading a block of imports covers the whole block
                while above >= 0 and lines[above].strip().startswith(("import ", "from ", "#")):
                    context += " " + lines[above]
                    above -= 1
                context = context.lower()
                if "#" not in context or not any(hint in context for hint in HEAVY_HINTS):
                    bare.append(f"line {node.lineno}: {lines[node.lineno - 1].strip()}")
    assert not bare, f"{path.relative_to(ROOT)}: function-local imports without a reason:\n" + "\n".join(bare)
