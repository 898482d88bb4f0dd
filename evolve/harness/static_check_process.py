"""The checker process (harness/static_checker.py starts it): jailed, it reads the request on the descriptor it is
given, runs the static check and writes its problems as one line of JSON."""
from __future__ import annotations

import json
import os
import sys


def main(argv) -> int:
    from . import jail, privilege

    # before anything it reads is judged; it may write only in its own folder (a package's import makes a temporary
    # file there: CuTeDSL's), which is deleted with it
    status = jail.apply([os.getcwd()], devices=False)
    uid = os.environ.get(privilege.UID_ENV)
    if uid is not None:
        why = privilege.drop(int(uid), os.environ.get(privilege.READ_ANY_ENV) == "1")
        if why:
            raise SystemExit(why)
    with os.fdopen(int(argv[1]), "rb") as said:
        request = json.loads(said.read())
    from . import lifeline

    lifeline.watch()
    from ..lang import DEFAULT
    from .static_check import ENTRY, Rejection, check_source

    try:
        problems = check_source(request["source"], request["filename"], request["forbid_calls"],
                                request["forbid_modules"], request["allow_modules"],
                                request["language"] or DEFAULT, request["entry"] or ENTRY)
    except Rejection as exc:
        problems = [str(exc)]
    sys.stdout.write(json.dumps({"problems": problems, "jail": status}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
