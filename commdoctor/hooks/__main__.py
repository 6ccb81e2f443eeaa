"""``python -m commdoctor.hooks [OPTIONS] script.py ARGS`` (or ``-m module ARGS``): run with the hooks on.

Promise: the script runs exactly as ``python script.py ARGS`` would (same
``sys.argv``, ``__main__`` module, exit status), with ``commdoctor.hooks``
installed first. Works under torchrun: ``torchrun ... -m commdoctor.hooks
train.py``. Options may also come from the environment (``COMMDOCTOR_HOOKS_MODE``,
``COMMDOCTOR_HOOKS_DIR``).
"""

from __future__ import annotations

import runpy
import sys


USAGE = """usage: python -m commdoctor.hooks [--mode raise|report|record|off] [--records-dir DIR] (script.py | -m module) [args...]

Runs the script (or module) with commdoctor.hooks installed; everything after
the script belongs to the script. Under torchrun: torchrun ... -m commdoctor.hooks train.py ARGS
"""


def _parse(argv: list[str]) -> tuple[dict[str, str], str | None, str | None, list[str]]:
    """(options, script, module, the script's args). Options stop at the script or -m MODULE."""
    opts: dict[str, str] = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            sys.stdout.write(USAGE)
            raise SystemExit(0)
        name, eq, val = a.partition("=")
        if name in ("--mode", "--records-dir"):
            if not eq:
                if i + 1 >= len(argv):
                    raise SystemExit(f"{name} needs a value\n{USAGE}")
                i, val = i + 1, argv[i + 1]
            opts[name[2:].replace("-", "_")] = val
        elif a == "-m":
            if i + 1 >= len(argv):
                raise SystemExit(f"-m needs a module name\n{USAGE}")
            return opts, None, argv[i + 1], argv[i + 2:]
        elif a.startswith("-"):
            raise SystemExit(f"unknown option {a}\n{USAGE}")
        else:
            return opts, a, None, argv[i + 1:]
        i += 1
    raise SystemExit(f"give a script (or -m MODULE) to run\n{USAGE}")


def main(argv: list[str] | None = None) -> int:
    import os

    opts, script, module, rest = _parse(list(sys.argv[1:] if argv is None else argv))
    mode = opts.get("mode")
    if mode is not None and mode not in ("raise", "report", "record", "off"):
        raise SystemExit(f"--mode {mode}: choose raise, report, record or off")
    import commdoctor.hooks as hooks

    cfg: dict[str, object] = {"mode": mode}
    if "records_dir" in opts:
        cfg["records_dir"] = opts["records_dir"]
    hooks.install(**cfg)
    if module is not None:
        sys.argv = [module, *rest]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        assert script is not None
        sys.argv = [script, *rest]
        # As `python script.py` does: the script's directory first on sys.path.
        sys.path[0] = os.path.dirname(os.path.abspath(script))
        runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
