"""Each dashboard folder stays shallow: its depth, the longest chain of imports among its own
modules (lazy ones included), is at most 6, and each folder's import-linter `layers` contract
has at most 6 layers; the top folder holds the sub-packages and the app's entry points only."""

import ast
import functools
import tomllib
from pathlib import Path

from tests.suite_run import ROOT

MAX_DEPTH = 6
ENTRY_POINTS = {"__init__.py", "__main__.py", "app.py", "wsgi.py"}


def module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(name: str, path: Path, modules: set[str]) -> set[str]:
    """The modules of ``modules`` that ``path`` imports anywhere in it (the longest known prefix
    of each dotted name, ``from pkg import mod`` counted as pkg.mod)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            names.add(base)
            names.update(f"{base}.{a.name}" for a in node.names)
    found = set()
    for dotted in names:
        parts = dotted.split(".")
        known = next((".".join(parts[:i]) for i in range(len(parts), 0, -1) if ".".join(parts[:i]) in modules), None)
        if known and known != name:
            found.add(known)
    return found


def folder_depths(root: Path, package: str = "dashboard") -> dict[str, int]:
    """Folder (dotted) -> the longest chain of imports among the modules in that folder."""
    paths = {module_name(root, p): p for p in (root / package).rglob("*.py")}
    graph = {n: imported(n, p, set(paths)) for n, p in paths.items()}
    folder = {n: module_name(root, p.parent / "__init__.py") for n, p in paths.items()}

    @functools.cache
    def depth(n: str) -> int:
        return 1 + max((depth(d) for d in graph[n] if folder[d] == folder[n]), default=0)

    depths: dict[str, int] = {}
    for n in paths:
        depths[folder[n]] = max(depths.get(folder[n], 0), depth(n))
    return depths


def test_every_dashboard_folder_is_at_most_six_imports_deep():
    depths = folder_depths(ROOT)
    print(" ".join(f"{f}={d}" for f, d in sorted(depths.items())))
    assert {"dashboard", "dashboard.data", "dashboard.store", "dashboard.ui", "dashboard.figures",
            "dashboard.pages"} <= set(depths)
    assert max(depths.values()) <= MAX_DEPTH, depths


def test_the_depth_counts_the_longest_chain_lazy_imports_included(tmp_path):
    (tmp_path / "dashboard" / "deep").mkdir(parents=True)
    (tmp_path / "dashboard" / "__init__.py").write_text("")
    (tmp_path / "dashboard" / "deep" / "__init__.py").write_text("")
    for i in range(1, 8):  # m7 -> m6 -> ... -> m1, one link lazy and one relative: 7 deep
        line = {4: "def f():\n    from dashboard.deep import m3\n", 6: "from . import m5\n"}.get(
            i, f"import dashboard.deep.m{i - 1}\n" if i > 1 else "")
        (tmp_path / "dashboard" / "deep" / f"m{i}.py").write_text(line)
    (tmp_path / "dashboard" / "top.py").write_text("import dashboard.deep.m7\n")  # another folder: not counted
    assert folder_depths(tmp_path) == {"dashboard": 1, "dashboard.deep": 7}


def test_the_top_folder_holds_sub_packages_and_entry_points_only():
    top = ROOT / "dashboard"
    modules = {p.name for p in top.glob("*.py")}
    assert modules == ENTRY_POINTS, modules - ENTRY_POINTS
    assert {p.name for p in top.iterdir() if (p / "__init__.py").exists()} >= {"data", "store", "ui", "figures",
                                                                               "pages", "synthetic"}


def test_every_dashboard_folder_has_a_layers_contract_of_at_most_six_layers():
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers_of = [c for c in contracts if c["type"] == "layers"]
    # a folder's own contract names it as container; the top folder's lists dashboard.* layers
    layered = {c["containers"][0]: c["layers"] for c in layers_of if "containers" in c}
    layered.update({"dashboard": c["layers"] for c in layers_of
                    if "containers" not in c and all(layer.startswith("dashboard.") for layer in c["layers"])})
    folders = set(folder_depths(ROOT))
    assert folders <= set(layered), folders - set(layered)
    assert all(len(layers) <= MAX_DEPTH for layers in layered.values()), layered
