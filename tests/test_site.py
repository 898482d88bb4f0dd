"""The static leaderboard site in a real browser (Debian's headless Chromium through Playwright): the rows are there,
tables sort, the curves and the tree are drawn, every kernel page opens, and no request leaves the machine. A
screenshot of each page is kept in build/test-artifacts/ (git-ignored) for a person to look at."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from test_leaderboard import H100, archives  # noqa: F401 - the fixture: two archives built by hand

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = Path(os.environ.get("EVOLVE_TEST_ARTIFACTS", ROOT / "build" / "test-artifacts"))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

sync_api = pytest.importorskip("playwright.sync_api", reason="pip install -e '.[test]' installs playwright")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium: apt-get install chromium (.ci/run does)")


class Browser:
    """One headless Chromium page that records every request and lets only file:// and data: URLs through."""

    def __init__(self, pw):
        self.browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        self.page = self.browser.new_page(viewport={"width": 1500, "height": 1000})
        self.requests: list[str] = []
        self.page.route("**/*", self._route)

    def _route(self, route):
        url = route.request.url
        self.requests.append(url)
        if url.startswith(("file://", "data:")):
            route.continue_()
        else:
            route.abort()

    def left_the_machine(self) -> list[str]:
        return [u for u in self.requests if not u.startswith(("file://", "data:"))]

    def open(self, path: Path):
        self.page.goto(path.as_uri())
        self.page.wait_for_load_state("load")
        return self.page

    def shot(self, name: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / name
        self.page.screenshot(path=str(path), full_page=True)
        return path


@pytest.fixture
def site(archives, tmp_path):  # noqa: F811
    a_db, b_db, ids = archives
    out = tmp_path / "site"
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
    done = subprocess.run([sys.executable, "-m", "evolve.cli", "leaderboard", "--db", a_db, "--db", b_db, "--html",
                           out], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return out, ids


def test_the_site_opens_from_disk_with_its_rows_curves_and_tree(site):
    out, ids = site
    with sync_api.sync_playwright() as pw:
        b = Browser(pw)
        try:
            page = b.open(out / "index.html")
            assert page.locator("tr.problem-row").count() == 5
            assert page.locator("tr.model-row").count() == 3  # alpha and beta on the H200, beta on the H100
            assert page.locator("h2", has_text=H100).count() == 1
            assert page.locator("tr.problem-row", has_text="none correct").count() == 1  # beta on rmsnorm keeps its row
            h200 = page.locator("section[data-device='NVIDIA H200']")
            assert "0.800" in h200.locator("table.problems").inner_text()
            index_shot = b.shot("leaderboard-index.png")
            b.page.set_viewport_size({"width": 1280, "height": 1000})  # the tables overflowed a 1280 px window
            assert page.evaluate("document.documentElement.scrollWidth") <= 1280
            b.page.set_viewport_size({"width": 1500, "height": 1000})

            table = h200.locator("table.problems")
            table.locator("th", has_text="best").first.click()  # descending
            # the fourth cell: problem, model, language, best
            firsts = [table.locator("tbody tr").nth(i).locator("td").nth(3).inner_text() for i in range(4)]
            assert firsts[0] == "0.800" and firsts[-1] == "-"
            table.locator("th", has_text="best").first.click()  # ascending ("-" stays last)
            assert table.locator("tbody tr").first.locator("td").nth(3).inner_text() == "0.500"

            link = page.locator(f"a[href='kernel-a-{ids['a_best']}.html']")
            link.click()
            page.wait_for_load_state("load")
            assert "k 3" in page.locator("pre.source").inner_text()
            assert "compile" in page.locator("pre.ladder").inner_text()

            run = b.open(out / "run-a-1.html")
            assert run.locator("svg.curve").count() == 3
            assert run.locator("svg.curve polyline").count() == 3  # candidates, dollars and minutes
            assert run.locator("svg.tree circle.node").count() == 4
            assert run.locator("svg.tree circle.failed").count() == 1
            assert run.locator("svg.tree circle.invalid").count() == 1
            assert run.locator("svg.tree line.edge").count() == 1  # the best from the seed
            assert "garbage" not in run.locator("svg.tree").inner_html()  # invalid: "invalid proposal"
            run_shot = b.shot("leaderboard-run.png")
            assert not b.left_the_machine(), b.left_the_machine()
        finally:
            b.browser.close()
    for shot in (index_shot, run_shot):
        assert shot.stat().st_size > 10_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_page_that_reaches_out_is_caught(tmp_path):
    """The check above can fail: a remote image is seen (and stopped) by the same recorder."""
    page = tmp_path / "leaky.html"
    page.write_text('<!doctype html><html><body><img src="http://192.0.2.1/pixel.png"></body></html>')
    with sync_api.sync_playwright() as pw:
        b = Browser(pw)
        try:
            b.open(page)
            assert b.left_the_machine() == ["http://192.0.2.1/pixel.png"]
        finally:
            b.browser.close()
