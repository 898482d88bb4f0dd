"""The static check in a process of its own (harness/parent/jailed.py): resolving the names a candidate writes imports
the library modules it names, so it never runs in the parent. A child that says nothing usable has the file refused,
never passed."""
from __future__ import annotations

from . import jailed

CHECK_LIMIT_S = 180.0  # a cold import of a large package on a loaded machine


def check_file(path, forbid_calls=(), forbid_modules=(), allow_modules=(), language: str | None = None,
               entry: str | None = None, fork: bool = True) -> list[str]:
    """The file's violations, as runner/static/check.py: screen gives them, judged in a jailed child."""
    try:
        source = open(path, encoding="utf-8").read()
    except (OSError, UnicodeDecodeError) as exc:
        return [f"cannot read the candidate: {exc}"]
    answer = jailed.ask("static_check", {"source": source, "filename": str(path), "forbid_calls": list(forbid_calls),
                                         "forbid_modules": list(forbid_modules), "allow_modules": list(allow_modules),
                                         "language": language, "entry": entry}, CHECK_LIMIT_S, fork=fork)
    problems = answer.get("problems")
    if isinstance(problems, list) and all(isinstance(p, str) for p in problems):
        return problems
    if answer.get("timed_out"):
        return [f"the static check did not finish within {CHECK_LIMIT_S:g} s (a module the file names takes that "
                f"long to import)"]
    return [f"the static check could not judge the file ({answer.get('error') or 'no answer'})"]
