"""tools/gpu_runner/restore_git.sh: a working tree copied without .git (as the GPU machine gets
it) gets its history back from .carry/repo.bundle, at the bundled commit, with a clean index."""

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def make_repo(root: Path, branch: str = "main") -> str:
    root.mkdir()
    git(root, "init", "-q", "-b", branch)
    (root / "a.txt").write_text("one\n")
    git(root, "add", "a.txt")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first")
    (root / "a.txt").write_text("two\n")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-am", "second")
    return git(root, "rev-parse", "HEAD")


def device_copy(repo: Path, dest: Path, bundle: bool) -> Path:
    """The working tree as the device gets it: files, no .git; .carry/ when carried."""
    shutil.copytree(repo, dest, ignore=shutil.ignore_patterns(".git"))
    shutil.copytree(REPO / "tools", dest / "tools", dirs_exist_ok=True)
    if bundle:
        (dest / ".carry").mkdir()
        git(repo, "bundle", "create", "-q", str(dest / ".carry" / "repo.bundle"), "--all")
    return dest


def restore(cwd: Path):
    return subprocess.run(["bash", "-c", "source tools/gpu_runner/restore_git.sh && git rev-parse HEAD"], cwd=cwd,
                          capture_output=True, text=True)


@pytest.mark.parametrize("branch", ["main", "master"])  # master: the device's default branch name too
def test_history_comes_back_from_the_bundle_at_the_bundled_commit(tmp_path, branch):
    head = make_repo(tmp_path / "repo", branch)
    copy = device_copy(tmp_path / "repo", tmp_path / "device", bundle=True)
    proc = restore(copy)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith(head) and "restored .git" in proc.stdout
    assert git(copy, "status", "--porcelain", "--untracked-files=no") == ""  # files match the commit
    assert len(git(copy, "rev-list", branch).split()) == 2  # the whole history, for worktrees of older commits
    assert git(copy, "config", "core.fileMode") == "false"  # a copy that lost its executable bits is not dirty


def test_a_broken_bundle_leaves_no_half_made_git_behind(tmp_path):
    make_repo(tmp_path / "repo")
    copy = device_copy(tmp_path / "repo", tmp_path / "device", bundle=True)
    bundle = copy / ".carry" / "repo.bundle"
    bundle.write_bytes(bundle.read_bytes()[:200])  # truncated in transfer
    proc = restore(copy)
    assert proc.returncode != 0 and "could not restore" in proc.stdout
    assert not (copy / ".git").exists()


def test_no_history_and_no_bundle_is_a_clear_error(tmp_path):
    make_repo(tmp_path / "repo")
    copy = device_copy(tmp_path / "repo", tmp_path / "device", bundle=False)
    proc = restore(copy)
    assert proc.returncode != 0 and "run tools/gpu_runner/prepare_carry.sh" in proc.stdout
