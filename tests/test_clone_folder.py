"""`python -m commdoctor` from the folder that holds a clone named commdoctor, after `pip install -e`.

A clone in ~/commdoctor and `cd ~`: the current folder is first on sys.path, and its `commdoctor/`
(the clone's root, no __init__.py) is a namespace package candidate. setuptools' default editable
install answers from a finder Python asks only after sys.path, so the root folder won and
`python -m commdoctor` (and `torchrun ... -m commdoctor run`) died with "cannot import name
'__version__'". The test installs a copy of this tree the way the README does, into a fresh
environment, and runs the command from the clone's parent folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from commdoctor import __version__
from tests.conftest import REPO


def _env() -> dict[str, str]:
    # Nothing of this checkout may be importable except through the install under test.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def test_python_m_commdoctor_runs_from_the_folder_that_holds_an_editable_clone(tmp_path: Path) -> None:
    home = tmp_path / "home"
    clone = home / "commdoctor"
    clone.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, clone / name)
    shutil.copytree(REPO / "commdoctor", clone / "commdoctor",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    # The dependencies (and setuptools, to build) come from the environment running the tests.
    Path(site, "zz_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    p = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index",
                        "--no-build-isolation", "-q", "-e", str(clone)],
                       capture_output=True, text=True, timeout=300, env=_env(), cwd=str(tmp_path))
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]

    run = subprocess.run([str(py), "-m", "commdoctor", "--version"], capture_output=True, text=True, timeout=120,
                         env=_env(), cwd=str(home))
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == f"commdoctor {__version__}"
    # The package, not the clone's root folder, is what `import commdoctor` gives there.
    where = subprocess.run([str(py), "-c", "import commdoctor; print(commdoctor.__file__)"], capture_output=True,
                           text=True, timeout=60, env=_env(), cwd=str(home))
    assert where.stdout.strip() == str(clone / "commdoctor" / "__init__.py"), where.stderr[-2000:]
