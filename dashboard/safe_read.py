"""The one JSON reader (benchmarks/harness/safe_read.py) under the dashboard's name: it lives with
the suite so that the suite's side has it too (see that module)."""

from benchmarks.harness.safe_read import (EARLIEST_DATE_MS, LATEST_DATE_MS, MAX_FILE_BYTES,  # noqa: F401
                                          MAX_JSON_DEPTH, UnreadableFile, checked_text, date_problem, inside,
                                          json_depth, parse_json, read_bytes, read_json, read_json_text)
