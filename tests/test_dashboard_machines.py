"""Machine against machine: two runners at their newest common commit, each value against its
own machine's roofline floor."""

import pytest

from dashboard.data import device_ceilings, speedup_tables
from dashboard.app import render_page
from dashboard.store.load_data import build_data
from dashboard.store.model import ResultsStore
from dashboard.pages import discover_pages, machines
from dashboard.data.urlstate import Query
from workload import cost
from workload.case import Case
from tests.suite_fixtures import MAIN_ENV, MAIN_MACHINE, SECOND_ENV, SECOND_MACHINE, write_dashboard_fixture
from tests.test_dashboard import _walk, texts


@pytest.fixture(scope="module")
def fx(tmp_path_factory):
    return write_dashboard_fixture(tmp_path_factory.mktemp("machines") / "results")


@pytest.fixture(scope="module")
def data(fx):
    return build_data(fx.results_dir)


def test_it_opens_on_the_newest_commit_both_machines_measured(data):
    h200, a100 = data.run(MAIN_MACHINE, MAIN_ENV), data.run(SECOND_MACHINE, SECOND_ENV)
    common = machines.newest_common(h200, a100)
    assert common == a100.commits["commit_hash"].iloc[-1] and common in set(h200.commits["commit_hash"])
    page = machines.layout(data, Query(f"?machine={MAIN_MACHINE}&machine_b={SECOND_MACHINE}"))
    values = {c.id["key"]: c.value for c in _walk(page) if isinstance(getattr(c, "id", None), dict)}
    assert values["a"] == values["b"] == common


def test_every_case_on_both_with_the_ratio_and_each_machines_roofline(data):
    h200, a100 = data.run(MAIN_MACHINE, MAIN_ENV), data.run(SECOND_MACHINE, SECOND_ENV)
    common = machines.newest_common(h200, a100)
    table = machines.machine_table(data, h200, common, a100, common)
    at_a, at_b = (r.at_commit(common, samples=False) for r in (h200, a100))
    both = set(zip(at_a["case"], at_a["impl"])) & set(zip(at_b["case"], at_b["impl"]))
    assert len(table) > 0 and set(zip(table["case"], table["impl"])) <= both
    ceil_a = device_ceilings.ceilings_of(data.ceilings, MAIN_MACHINE, MAIN_ENV, common)
    ceil_b = device_ceilings.ceilings_of(data.ceilings, SECOND_MACHINE, SECOND_ENV, common)
    assert ceil_a.copy_gbps > 2 * ceil_b.copy_gbps  # two different devices
    for r in table.itertuples():
        lat = {side: rows[(rows["case"] == r.case) & (rows["impl"] == r.impl) & (rows["metric"] == "latency")]
               ["value"].iloc[0] for side, rows in (("a", at_a), ("b", at_b))}
        assert (r.a, r.b) == (lat["a"], lat["b"]) and r.ratio == pytest.approx(lat["b"] / lat["a"])
        case = Case.from_key(r.case)
        assert r.a_roofline == pytest.approx(cost.floor_seconds(case, ceil_a) / lat["a"])
        assert r.b_roofline == pytest.approx(cost.floor_seconds(case, ceil_b) / lat["b"])
    # the fixture's latencies sit a fixed factor above each machine's floor: the A100 is slower,
    # and each machine's roofline fraction says the hardware explains it
    assert speedup_tables.geomean(table["ratio"]) > 1.5
    assert speedup_tables.geomean(table["a_roofline"] / table["b_roofline"]) == pytest.approx(1, abs=0.05)


def test_the_page_and_its_callback(fx, data):
    store = ResultsStore(fx.results_dir, detect_in_background=False)
    shown = render_page(store, discover_pages(), "/machines", "")
    assert "Machine against machine" in texts(shown)
    store.close()
    h200, a100 = data.run(MAIN_MACHINE, MAIN_ENV), data.run(SECOND_MACHINE, SECOND_ENV)
    common = machines.newest_common(h200, a100)
    rows, columns, summary, cards = machines.update(data, MAIN_MACHINE, MAIN_ENV, common, SECOND_MACHINE, SECOND_ENV,
                                                    common)
    assert rows and "the same commit" in texts(summary)
    assert "NVIDIA A100" in texts(cards) and "NVIDIA H200" in texts(cards) and "GB/s" in texts(cards)
    older = h200.commits["commit_hash"].iloc[0]  # a commit A100 never ran: nothing to compare there
    rows, _, summary, _ = machines.update(data, MAIN_MACHINE, MAIN_ENV, older, SECOND_MACHINE, SECOND_ENV, common)
    assert "different commits" in texts(summary)


# --------------------------------------------------------------------------- the page registry decides the mode


def test_the_registry_says_why_a_suite_page_is_off_for_other_results(tmp_path):
    """Machines and Roofline no longer check the mode themselves: the registry shows their
    notice for another project's results and for a folder of static compile metrics only, and
    the Overview of the latter is the Kernels page."""
    from tests.generic_fixtures import write_generic_history
    from tests.test_dashboard_static import _write_static

    write_generic_history(tmp_path / "generic", n_commits=6)
    _write_static(tmp_path / "static")
    pages = discover_pages()
    by_path = {p.path: p for p in pages}
    assert by_path["/machines"].modes == by_path["/roofline"].modes == ("suite",)
    for folder, notice in (("generic", "is off for these results"), ("static", "No timings in these results yet")):
        store = ResultsStore(tmp_path / folder, detect_in_background=False)
        try:
            for path in ("/machines", "/roofline"):
                text = texts(render_page(store, pages, path, ""))
                assert notice in text and "Could not build" not in text, (folder, path)
                assert by_path[path].title in text
            overview = texts(render_page(store, pages, "/", ""))
        finally:
            store.close()
        assert notice in overview
    assert "Static compile metrics, not timings" in overview  # the Kernels page, standing in


def _page_modules():
    import ast
    from pathlib import Path

    import dashboard.pages as package

    folder = Path(package.__file__).parent
    return {f"dashboard.pages.{p.stem}": ast.parse(p.read_text()) for p in folder.glob("*.py") if p.stem != "__init__"}


def test_pages_never_import_pages():
    """A page (a module with PAGE) is imported by the registry only; helpers a few pages share
    live in modules of their own (underscore names, no PAGE)."""
    import ast

    modules = _page_modules()
    pages = {name for name, tree in modules.items()
             if any(isinstance(n, ast.Assign) and any(getattr(t, "id", None) == "PAGE" for t in n.targets)
                    for n in tree.body)}
    assert {"dashboard.pages.machines", "dashboard.pages.roofline", "dashboard.pages.trends"} <= pages
    found = set()
    for name, tree in modules.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                targets = {node.module} | {f"{node.module}.{a.name}" for a in node.names}
                found |= {(name, t) for t in targets & pages if t != name}
    assert not found, found


def test_the_registry_alone_checks_the_mode():
    """No page module reads the results' mode (data.mode, .generic, .static_only): what a page
    shows for a mode is its Page's modes, mode_layouts and stand_ins."""
    import ast

    from dashboard.data.dashboard_data import GENERIC, STATIC, SUITE
    from dashboard.pages import _generic_trends, discover_pages

    checks = {"mode", "generic", "static_only"}
    found = sorted((name, node.lineno) for name, tree in _page_modules().items() for node in ast.walk(tree)
                   if isinstance(node, ast.Attribute) and node.attr in checks
                   and getattr(node.value, "id", None) == "data")
    assert not found, found
    trends = {p.path: p for p in discover_pages()}["/trends"]
    assert trends.layout_for(GENERIC) is _generic_trends.layout and trends.layout_for(SUITE) is trends.layout
    assert STATIC not in trends.modes  # the registry says why Trends is off


def test_a_link_to_a_machine_b_the_results_do_not_have_gets_the_notice(fx):
    text = texts(render_page(ResultsStore(fx.results_dir, detect_in_background=False), discover_pages(),
                             "/machines", "?machine_b=nosuch"))
    assert "This link asks for what these results do not have" in text and "machine_b 'nosuch'" in text
    assert f"showing {SECOND_MACHINE}" in text or f"showing {MAIN_MACHINE}" in text
