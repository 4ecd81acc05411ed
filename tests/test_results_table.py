"""asv_results.table.ResultsTable: what it builds at load (value, status, the rows of a series)
matches the plain scan of every row it replaces."""

import numpy as np
import pytest

from asv_results.cache import ResultsCache
from asv_results.table import ResultsTable
from tests.suite_fixtures import write_dashboard_fixture, write_scale_history


@pytest.fixture(scope="module", params=["suite", "one-signature"])
def table(request, tmp_path_factory):
    results = tmp_path_factory.mktemp("table") / "results"
    if request.param == "suite":  # files of several benchmark sets: several groups
        write_dashboard_fixture(results)
    else:
        write_scale_history(results, n_commits=12, n_series=60)
    cache = tmp_path_factory.mktemp("table-cache")
    ResultsCache(results, cache).load()  # written; the table below reads it back, mapped
    return ResultsTable(ResultsCache(results, cache).load())


def _slow_value_and_failed(table):
    """Each file's rows copied straight from its segment's mapping to where the table puts them."""
    n_rows = {(e.segment, e.row_start): e.n_rows for e in table.parsed.files if e.reason is None}
    value = np.full(table.n_rows, np.nan)
    failed = np.zeros(table.n_rows, bool)
    for dest, segment, src in zip(table.file_dest_start, table.file_segment, table.file_src_start):
        arrays, n = table.segments[segment].arrays, n_rows[(segment, src)]
        value[dest:dest + n] = arrays["value"][src:src + n]
        failed[dest:dest + n] = arrays["failed"][src:src + n]
    return value, failed


def test_value_and_status_are_each_files_rows_and_asvs_status(table):
    value, failed = _slow_value_and_failed(table)
    np.testing.assert_array_equal(table.value, value)
    expected = np.where(failed, 2, np.where(np.isnan(value), 1, 0)).astype(np.int8)
    np.testing.assert_array_equal(table.status, expected)
    assert table.status.dtype == np.int8 and set(np.unique(table.status)) <= {0, 1, 2}


def test_the_rows_of_series_are_the_rows_a_scan_finds_in_table_order(table):
    n = len(table.series)
    rng = np.random.default_rng(0)
    for ids in ([0], [n - 1], list(range(n)), sorted(rng.choice(n, size=max(1, n // 3), replace=False)),
                [n - 1, 0]):
        expected = np.flatnonzero(np.isin(table.series_of_row, ids))
        np.testing.assert_array_equal(table.rows_of_series(ids), expected)
    assert len(table.rows_of_series([])) == 0
