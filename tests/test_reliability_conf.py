"""Issue 26 items 5 and 12 (commit links): the asv config is read with a size cap, parsed once per
change of the file and outside the store's lock; a show_commit_url that is not a web address
(data:, javascript:, file:) gives no links."""

import json
import os
import time

import pytest

from asv_results import asvconf, conf_reader
from dashboard.store.model import ResultsStore
from tests.suite_fixtures import write_dashboard_fixture

URL = "https://example.org/commit/"


def _conf(path, **extra):
    path.write_text(json.dumps({"version": 1, "project": "p", "show_commit_url": URL, **extra}))
    return path


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return write_dashboard_fixture(tmp_path_factory.mktemp("conf") / "results").results_dir


def test_a_config_over_the_size_cap_is_refused_at_once(tmp_path):
    path = tmp_path / "asv.conf.json"
    path.write_text('{"version": 1, "show_commit_url": "%s", "pad": "%s"}' % (URL, "x" * (4 << 20)))
    started = time.perf_counter()
    info = asvconf.read_project(path)
    assert time.perf_counter() - started < 2.0  # asv's json5 reader took ~40 s over 4 MiB
    assert info.commit_url is None
    assert any("too large" in n and f"{conf_reader.MAX_CONF_BYTES:,}" in n for n in info.notes), info.notes


def test_comments_trailing_commas_and_slashes_in_strings_are_read(tmp_path):
    path = tmp_path / "asv.conf.json"
    path.write_text('// asv\'s template starts like this\n{\n  "version": 1, /* block */\n'
                    '  "show_commit_url": "https://example.org/c//x/",  // a comment\n'
                    '  "matrix": {"numpy": ["1.0",],},\n}\n')
    doc, reason = conf_reader.load_conf(path)
    assert reason is None
    assert doc == {"version": 1, "show_commit_url": "https://example.org/c//x/", "matrix": {"numpy": ["1.0"]}}


def test_json5_syntax_in_a_small_config_is_still_read(tmp_path):
    path = tmp_path / "asv.conf.json"
    path.write_text("{version: 1, 'show_commit_url': 'https://example.org/c/'}")
    assert asvconf.read_project(path).commit_url == "https://example.org/c/"


def test_text_that_is_not_json_is_named(tmp_path):
    path = tmp_path / "asv.conf.json"
    path.write_text("this is not a config")
    info = asvconf.read_project(path)
    assert info.commit_url is None and any("not JSON" in n for n in info.notes), info.notes


def test_a_deeply_nested_config_is_refused_before_parsing(tmp_path):
    path = tmp_path / "asv.conf.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    doc, reason = conf_reader.load_conf(path)
    assert doc is None and "nested" in reason


def test_the_config_is_parsed_once_per_change_of_the_file(tmp_path, monkeypatch):
    reads = []
    real_read = conf_reader._read
    monkeypatch.setattr(conf_reader, "_read", lambda p: reads.append(p) or real_read(p))
    path = _conf(tmp_path / "asv.conf.json")
    for _ in range(3):
        assert asvconf.read_project(path).commit_url == URL
    assert len(reads) == 1
    _conf(path, show_commit_url="https://example.org/other/", padding="changed size")
    assert asvconf.read_project(path).commit_url == "https://example.org/other/"
    assert len(reads) == 2


def test_a_results_reload_does_not_parse_the_config_again_nor_under_the_lock(results, tmp_path, monkeypatch):
    conf = _conf(tmp_path / "asv.conf.json")
    store = ResultsStore(results, asv_conf=conf, detect_in_background=False)
    under_lock = []
    real_read = conf_reader._read
    monkeypatch.setattr(conf_reader, "_read", lambda p: under_lock.append(store._lock.locked()) or real_read(p))
    try:
        assert store.get().commit_url == URL
        victim = next(results.glob("*/*.json"))
        os.utime(victim, ns=(time.time_ns(), time.time_ns()))  # the results change: a reload
        store._checked = 0.0
        reloaded = store.get()
        assert reloaded.commit_url == URL and reloaded.signature != ()
        assert under_lock == [False]  # parsed once, before the store's lock was taken
    finally:
        store.close()


@pytest.mark.parametrize("url", ["data:text/html,<script>alert(1)</script>#", "javascript:alert(1)//",
                                 " javascript:alert(1)//", "JavaScript:alert(1)//", "java\tscript:alert(1)//",
                                 "file:///etc/passwd#", "https://example.org/\nx", "//evil.example/", 42])
def test_a_commit_url_that_is_not_a_web_address_gives_no_links(tmp_path, url):
    info = asvconf.read_project(_conf(tmp_path / "asv.conf.json", show_commit_url=url))
    assert info.commit_url is None
    assert any("not an http(s) address" in n for n in info.notes), info.notes


@pytest.mark.parametrize("url", ["https://github.com/o/r/commit/", "HTTP://example.org/c/"])
def test_a_web_commit_url_is_kept(tmp_path, url):
    assert asvconf.read_project(_conf(tmp_path / "asv.conf.json", show_commit_url=url)).commit_url == url
