"""README's two pictures: a bench of two scripted models, its leaderboard site, and screenshots of two of its pages.

    python docs/pictures.py [--budget-per-cell 3m] [--out docs/images] [--work DIR]

The models are served by the test suite's scripted OpenAI-compatible server (tests/llm_server.py; litellm really
talks HTTP to it): `openai/scripted-a` answers with the problem's seeds and correct solutions, `openai/scripted-b`
mostly with its wrong solutions, each answer made new by one module-level line. The bench runs over softmax and
rmsnorm on this machine (on one without a GPU the scores are interpreter rankings, and the pages say so); then
`evolve leaderboard --html` writes the site, and headless Chromium (the test extras' playwright, Debian's chromium)
takes the index page's tables and the top of the first rmsnorm run's page (its progress curves and evolution tree).
--work DIR keeps the bench's archive (bench.db) and site there; a bench.db already there is drawn again, not re-run.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from llm_server import ScriptedLLM  # noqa: E402

from evolve.problems import strip_test_header  # noqa: E402

PROBLEMS = ("softmax", "rmsnorm")
WRONG = {"softmax": ("mask_off_by_one.py", "no_max_subtract.py", "torch_ops.py"),
         "rmsnorm": ("eps_outside_sqrt.py", "mean_over_block.py")}


class TwoModels(ScriptedLLM):
    """Answers by the model asked: scripted-a the problem's right kernels in turn, scripted-b mostly its wrong ones."""

    def __init__(self):
        super().__init__()
        self.count = itertools.count(1)
        self.right, self.wrong = {}, {}
        for name in PROBLEMS:
            folder = ROOT / "problems" / name
            files = sorted((folder / "seeds").glob("*.py")) + sorted((folder / "solutions" / "correct").glob("*.py"))
            self.right[name] = [strip_test_header(f.read_text()) for f in files]
            self.wrong[name] = [strip_test_header((folder / "solutions" / "wrong" / f).read_text())
                                for f in WRONG[name]]

    def _next(self, body, headers):
        with self._lock:
            self.requests.append(body)
        text = json.dumps(body.get("messages", [])).lower()
        problem = "rmsnorm" if "rmsnorm" in text else "softmax"
        n = next(self.count)
        pool = self.right[problem] if not body.get("model", "").endswith("-b") else \
            self.wrong[problem] + self.right[problem][:1]
        return f"```python\n{pool[n % len(pool)]}\n_VARIANT = {n}\n```"


def screenshots(site: Path, out: Path) -> None:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1500, "height": 900})
        page.goto((site / "index.html").as_uri())
        bottom = page.locator("h2", has_text="Definitions").bounding_box()["y"] - 8
        right = max(box["x"] + box["width"] for box in (t.bounding_box() for t in page.locator("table").all()))
        page.screenshot(path=str(out / "leaderboard.png"), full_page=True,
                        clip={"x": 0, "y": 0, "width": right + 12, "height": bottom})
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        run = next(p for p in sorted(site.glob("run-*.html")) if "rmsnorm with" in p.read_text())
        page.goto(run.as_uri())
        bottom = page.locator("h2", has_text="Candidates").bounding_box()["y"] - 8
        page.screenshot(path=str(out / "run.png"), full_page=True,
                        clip={"x": 0, "y": 0, "width": 1280, "height": bottom})
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget-per-cell", default="3m")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    parser.add_argument("--work", type=Path, default=None, help="where the archive and site go [a temporary folder]")
    args = parser.parse_args()
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, TwoModels() as llm:
        work = (args.work or Path(tmp)).resolve()
        work.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, OPENAI_API_KEY="scripted")
        if not (work / "bench.db").exists():  # paths relative to `work`: the pages name the archive as given
            problems = [a for p in PROBLEMS for a in ("--problem", str(ROOT / "problems" / p))]
            subprocess.run([sys.executable, "-m", "evolve.cli", "bench", "--model", "openai/scripted-a", "--model",
                            "openai/scripted-b", *problems, "--budget-per-cell", args.budget_per_cell, "--api-base",
                            llm.url, "--db", "bench.db"], env=env, cwd=work, check=True)
        shutil.rmtree(work / "site", ignore_errors=True)
        subprocess.run([sys.executable, "-m", "evolve.cli", "leaderboard", "--db", "bench.db", "--html", "site"],
                       env=env, cwd=work, check=True)
        screenshots(work / "site", args.out)
    print(f"written: {args.out / 'leaderboard.png'}, {args.out / 'run.png'}")


if __name__ == "__main__":
    main()
