"""evolve: LLMs write GPU kernels; a sealed rung ladder decides which ones are correct and fast.

As a library (docs/python-api.md): evolve.evaluate, evolve.run, evolve.best and evolve.board (the leaderboard),
from evolve/api.py.
They are imported when first used, so `import evolve` stays light (no torch until a call needs it).
"""

__version__ = "0.1.0"

_API = ("evaluate", "run", "best", "board", "plan_run", "start_search", "Best", "Plan", "SetupError")


def __getattr__(name):
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'evolve' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_API])
