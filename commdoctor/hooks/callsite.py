"""The user's call site of a collective: the first frame outside torch, commdoctor and the stdlib.

Promise: standard library only, and cheap on the hot path. Frames are walked
with ``sys._getframe``; whether a code object is "internal" is decided once per
code object and cached, and the ``file:line`` text is cached per (code, instruction offset),
so a call costs a few dictionary lookups.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from types import CodeType, FrameType

_internal: dict[CodeType, bool] = {}
_text: dict[tuple[CodeType, int], str] = {}
_at: dict[tuple[CodeType, int], str] = {}  # (code, instruction offset) -> text
_cwd = ""


def _init_roots() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(package roots that are always internal, stdlib roots that are internal outside site-packages)."""
    pkgs = [os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep]  # the commdoctor package
    try:
        import torch

        pkgs.append(os.path.dirname(os.path.abspath(torch.__file__)) + os.sep)
    except ImportError:  # pragma: no cover - hooks always run beside torch
        pass
    try:  # torch's @deprecated wrappers (reduce_scatter_tensor, ...) live in typing_extensions
        import typing_extensions

        pkgs.append(os.path.abspath(typing_extensions.__file__))
    except ImportError:
        pass
    std = [os.path.abspath(p) + os.sep for k in ("stdlib", "platstdlib") if (p := sysconfig.get_paths().get(k))]
    return tuple(dict.fromkeys(pkgs)), tuple(dict.fromkeys(std))


_roots: tuple[tuple[str, ...], tuple[str, ...]] | None = None


def is_internal(filename: str) -> bool:
    """True for frames of torch, commdoctor and the standard library (not site-packages)."""
    global _roots
    if _roots is None:
        _roots = _init_roots()
    if filename.startswith("<"):  # <frozen runpy> is internal; <string>/<stdin> are the user's
        return filename.startswith("<frozen")
    path = os.path.abspath(filename)
    pkgs, std = _roots
    if any(path.startswith(r) for r in pkgs):
        return True
    if any(path.startswith(r) for r in std):
        return os.sep + "site-packages" + os.sep not in path and os.sep + "dist-packages" + os.sep not in path
    return False


def fmt(code: CodeType, line: int) -> str:
    global _cwd
    key = (code, line)
    s = _text.get(key)
    if s is None:
        if not _cwd:
            _cwd = os.getcwd() + os.sep
        path = code.co_filename
        if path.startswith(_cwd):
            path = path[len(_cwd):]
        s = _text[key] = f"{path}:{line}"
        if len(_text) > 65536:  # generated code could grow it without bound
            _text.clear()
    return s


def user_site(depth: int = 2) -> str:
    """``file:line`` of the first frame outside torch/commdoctor/stdlib, or "" when there is none."""
    try:
        f: FrameType | None = sys._getframe(depth)
    except ValueError:
        return ""
    return site_of(f)


def site_of(f: FrameType | None) -> str:
    """``file:line`` of the first frame from ``f`` outwards that is outside torch/commdoctor/stdlib, or ""."""
    internal = _internal
    while f is not None:
        code = f.f_code
        flag = internal.get(code)
        if flag is None:
            flag = internal[code] = is_internal(code.co_filename)
        if not flag:
            # Keyed by the instruction offset: f_lineno is computed by scanning the code's line
            # table from its start on every read, which costs microseconds in long functions.
            key = (code, f.f_lasti)
            s = _at.get(key)
            if s is None:
                s = fmt(code, f.f_lineno)
                if len(_at) > 65536:
                    _at.clear()
                _at[key] = s
            return s
        f = f.f_back
    return ""
