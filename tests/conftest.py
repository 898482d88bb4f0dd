import os
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

ROOT = Path(__file__).resolve().parents[1]
SOFTMAX = ROOT / "problems" / "softmax"


def _has_gpu() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:  # noqa: BLE001
        return False


HAS_GPU = _has_gpu()


def pytest_collection_modifyitems(config, items):
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU; run by hand on one")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def softmax_dir():
    return SOFTMAX


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory):
    """One cache of device peaks and baseline timings for the whole session, as in real use.

    EVOLVE_TEST_CACHE points it at a lasting folder (on a GPU, to skip re-measuring peaks and torch baselines)."""
    return os.environ.get("EVOLVE_TEST_CACHE") or str(tmp_path_factory.mktemp("cache"))


@pytest.fixture
def options(cache_dir):
    from evolve.harness import EvalOptions

    return EvalOptions(cache_dir=cache_dir, timeout_s=300)
