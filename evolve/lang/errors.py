"""Where an error a candidate's call raised came from: a language's compiler raises plain errors too (a failed pass, a
failed nvcc), and the compile rung fails a kernel by where the error was raised, not only by its class."""
from __future__ import annotations

import traceback


def package_folders(*names: str) -> tuple[str, ...]:
    """The installed folders of these top-level packages, each ending in a separator (found without importing)."""
    import importlib.util
    import os

    folders = []
    for name in names:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        folders += [os.path.join(root, "") for root in (spec.submodule_search_locations or [])] if spec else []
    return tuple(folders)


def raised_inside(error: BaseException, folders: tuple[str, ...]) -> bool:
    """Whether any frame of the error's traceback runs code under one of these folders."""
    return bool(folders) and any(frame.filename.startswith(folders)
                                 for frame in traceback.extract_tb(error.__traceback__))
