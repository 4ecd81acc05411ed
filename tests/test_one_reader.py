"""One reader for every JSON file (issue 31): result files, runner-state companions, reasons,
profiles, accepted.json, the cache's manifest, and whatever kind comes next are parsed only by
asv_results/safe_read.py, so each gets its limits (regular file inside the folder, size
and depth capped) by construction. The sources are scanned for any other JSON parse."""

import ast
from pathlib import Path

from tests.suite_run import ROOT

READER = "asv_results/safe_read.py"
SOURCES = ("asv_results", "benchmarks", "dashboard", "fused_mlp", "regressions", "tools")
JSON_MODULES = {"json", "json5", "orjson", "ujson", "simplejson"}
PARSERS = {"load", "loads"}
# The parses that read no file's contents, each with why; a stale entry fails the test too.
NOT_FILES = {
    ("benchmarks/harness/runner_state.py", "json.loads(done.stdout)"): "a snapshot subprocess's output",
    ("asv_results/cache.py", "json.loads(key)"): "a layout key this module made with json.dumps",
    ("dashboard/ui/callbacks_boundary.py", "json.loads(declared)"): "a Dash component id",
    ("dashboard/ui/callbacks_boundary.py", "json.loads(dep['id'])"): "a Dash component id",
    ("dashboard/ui/callbacks_boundary.py", "json.loads(to_json(app.layout))"): "the app's own layout",
    ("asv_results/conf_reader.py", "json5.loads(text)"): "asv.conf.json's text, read by the reader (read_json_text)",
    ("regressions/judgement.py",
     "json.loads(render_json(self.findings, self.status_changes, self.verdict, self.report, self.header, self.settings))"):
        "the gate's report, rendered in this process",
    ("tools/measure_dashboard_scale.py", "json.loads(done.stdout.strip().splitlines()[-1])"): "a subprocess's output",
}


def json_parses(source: str) -> list[str]:
    """Every call in ``source`` that parses JSON: json.load(s) and its kin, however imported,
    and pandas' read_json."""
    tree = ast.parse(source)
    modules, functions = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name in JSON_MODULES}
        elif isinstance(node, ast.ImportFrom) and node.module in JSON_MODULES:
            functions |= {a.asname or a.name for a in node.names if a.name in PARSERS}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if (isinstance(f, ast.Attribute) and f.attr in PARSERS and isinstance(f.value, ast.Name)
                and f.value.id in modules) or (isinstance(f, ast.Name) and f.id in functions) \
                or (isinstance(f, ast.Attribute) and f.attr == "read_json" and isinstance(f.value, ast.Name)
                    and f.value.id in ("pd", "pandas")):
            found.append(ast.unparse(node))
    return found


def test_the_scan_finds_every_spelling_of_a_json_parse():
    assert json_parses("import json\nx = json.loads(p.read_text())") == ["json.loads(p.read_text())"]
    assert json_parses("import json as j\nwith open(p) as f:\n    j.load(f)") == ["j.load(f)"]
    assert json_parses("from json import loads as parse\nparse(text)") == ["parse(text)"]
    assert json_parses("import pandas as pd\npd.read_json(p)") == ["pd.read_json(p)"]
    assert json_parses("from asv_results.safe_read import read_json\nread_json(p, root)") == []


def test_only_the_reader_parses_json():
    found = {}
    for folder in SOURCES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if name != READER:
                found.update({(name, call): None for call in json_parses(path.read_text())})
    outside = sorted(set(found) - set(NOT_FILES))
    assert outside == [], ("parse JSON files through asv_results.safe_read (read_json, or parse_json "
                           f"for text that came from no file): {outside}")
    assert sorted(set(NOT_FILES) - set(found)) == []  # an entry whose call is gone: drop it
    assert json_parses(Path(ROOT / READER).read_text())  # the reader itself does parse
