"""benchmarks.checkout: results written by a run do not make the checkout 'dirty' (a GPU session
runs the suite, then the profile pass, in one checkout whose results/ is tracked)."""

import subprocess

from benchmarks.checkout import uncommitted_code_changes


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_changed_results_are_not_code_changes_but_code_is(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "benchmarks.json").write_text("{}")
    (tmp_path / "kernel.py").write_text("x = 1\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")
    (tmp_path / "results" / "benchmarks.json").write_text('{"new": 1}')
    (tmp_path / "results" / "new-result.json").write_text("{}")
    assert uncommitted_code_changes(tmp_path) == ""
    (tmp_path / "kernel.py").write_text("x = 2\n")
    assert "kernel.py" in uncommitted_code_changes(tmp_path)


def test_lost_executable_bits_are_not_code_changes(tmp_path):
    """The device's copy of the tree may drop executable bits; the code is still HEAD's."""
    script = tmp_path / "tool.sh"
    script.write_text("echo hi\n")
    script.chmod(0o755)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")
    script.chmod(0o644)
    assert uncommitted_code_changes(tmp_path) == ""
