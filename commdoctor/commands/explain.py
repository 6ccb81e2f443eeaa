"""``commdoctor explain CODE|CHECK``: a code's documentation and remedy, from the check itself."""

from __future__ import annotations

import argparse

from commdoctor.core.errors import CommDoctorError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("what", metavar="CODE|CHECK", help="a finding code (ENV030) or a check name (env.shm)")


def main(args: argparse.Namespace) -> int:
    from commdoctor.checks import BUILTIN_CHECKS, find_check, find_code
    from commdoctor.checks.base import explain_text

    from commdoctor.core.model import ALIASES

    old = args.what.upper()
    if old in ALIASES:
        # An old code names the same diagnosis as its canonical one: say so, then give that page.
        code = ALIASES[old]
        owner = find_code(code)
        if owner is not None:
            print(f"{old} is now {code}: one check ({owner.name}) gives this diagnosis whether a live probe "
                  f"or a log found it; {old} still selects it (--select / --ignore) and is listed in "
                  f"the finding's aliases.\n")
            print(explain_text(owner, code), end="")
            return 0
    code_check = find_code(args.what)
    if code_check is not None:
        print(explain_text(code_check, args.what.upper()), end="")
        return 0
    check = find_check(args.what)
    if check is not None:
        print(explain_text(check), end="")
        return 0
    import difflib

    known = [c.name for c in BUILTIN_CHECKS] + [code for c in BUILTIN_CHECKS for code in c.codes()] + list(ALIASES)
    near = difflib.get_close_matches(args.what.upper() if args.what[:1].isalpha() and args.what.isupper() else args.what, known, n=3)
    hint = f"; did you mean {', '.join(near)}?" if near else "; 'commdoctor checks' lists them all"
    raise CommDoctorError(f"no code or check named {args.what!r}{hint}")
