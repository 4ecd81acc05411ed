"""An asv environment type: asv's virtualenv, which also sees the packages of the Python that runs
asv (torch, triton, asv_runner...), wherever they live: a venv, as on CI and the GPU runner's
image, or the system Python. Loaded through asv.conf.json's "plugins"; asv imports it from the
directory of the config.

asv's own virtualenv sees the *base* interpreter's site-packages at most
(VIRTUALENV_SYSTEM_SITE_PACKAGES=1), never a venv's, so `asv run A..B` found no torch. Here a
.pth file in the new environment names the running Python's site-packages; they come after the
environment's own, so the commit's fused_mlp, built and installed there, is the one imported,
and only the paths are added (that site's own .pth files, such as an editable fused_mlp's, are
not run). pip never reaches for an index (PIP_NO_INDEX=1): what asv requires in an environment
(asv_runner, pympler, build, setuptools) is in the Python running asv already, so it works
offline; virtualenv's own pip and setuptools build the wheel (no `wheel` package needed).
"""

import os
import site

from asv import util
from asv.plugins.virtualenv import Virtualenv

PTH_NAME = "asv-runner-site.pth"


def runner_site_dirs() -> list[str]:
    """The site-packages of the Python running asv (a venv's own, or the system's)."""
    dirs = list(site.getsitepackages())
    user = site.getusersitepackages()
    if site.ENABLE_USER_SITE and os.path.isdir(user):
        dirs.append(user)
    return dirs


class VirtualenvWithRunnerSite(Virtualenv):
    tool_name = "virtualenv-runner-site"

    def run_executable(self, executable, args, **kwargs):
        kwargs["env"] = {**kwargs.get("env", os.environ), "PIP_NO_INDEX": "1"}
        return super().run_executable(executable, args, **kwargs)

    def _install_requirements(self):
        """The .pth first, so that pip finds asv's requirements installed; then those requirements
        as asv's virtualenv installs them, without upgrading pip or installing wheel (offline,
        there is nothing to get them from, and virtualenv's pip and setuptools suffice)."""
        purelib = self.run(["-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).strip()
        with open(os.path.join(purelib, PTH_NAME), "w") as f:
            f.write("".join(f"{d}\n" for d in runner_site_dirs()))
        for key, val in {**self._requirements, **self._base_requirements}.items():
            declaration = f"{key[4:] if key.startswith('pip+') else key} {val}"
            util.construct_pip_call(self._run_pip, util.ParsedPipDeclaration(declaration))()
