"""What a non-editable install carries: the prompt templates (evolve run --model needs them), the leaderboard site's
templates, the context notes models search, and the license."""
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_wheel_carries_the_prompt_templates_and_the_license(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    for folder in ("evolve", "prompts", "leaderboard", "context"):
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp_path / "dist"), str(source)], check=True, capture_output=True, timeout=300)
    wheel = next((tmp_path / "dist").glob("evolve-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    templates = sorted(p.name for p in (ROOT / "prompts").glob("*.j2"))
    assert templates and all(f"evolve/prompts/{name}" in names for name in templates), names
    assert any(name.endswith("LICENSE") for name in names), names
    assert "evolve/harness/runner/runner.py" in names and "evolve/lang/triton/rules.py" in names
    assert "evolve/lang/cutedsl/runner_side.py" in names
    assert "evolve/harness/shared/formats/gpumode.py" in names
    assert "evolve/harness/shared/formats/kernelbench.py" in names
    scaffold = sorted(p.name for p in (ROOT / "evolve" / "scaffold").iterdir()  # what `evolve init` writes from
                      if p.name != "__pycache__")  # left by a test that loaded the scaffold as a problem
    assert scaffold and all(f"evolve/scaffold/{name}" in names for name in scaffold), names
    site = sorted(str(p.relative_to(ROOT / "leaderboard")) for p in (ROOT / "leaderboard").rglob("*") if p.is_file())
    assert site and all(f"evolve/leaderboard_site/{name}" in names for name in site), names  # the site's templates
    # what models search (evolve/knowledge.py): each language's notes, and the examples beside CuTeDSL's
    notes = sorted(str(p.relative_to(ROOT / "context")) for p in (ROOT / "context").rglob("*") if p.is_file())
    assert {"triton/online_softmax.md", "cutedsl/basics.md", "cutedsl/examples/vector_scale.py"} <= set(notes)
    assert all(f"evolve/context_docs/{name}" in names for name in notes), names


def test_the_installed_templates_are_found_first(tmp_path, monkeypatch):
    import evolve.proposer as proposer
    import evolve.site as site

    assert site.templates_dir() == ROOT / "leaderboard"
    monkeypatch.setattr(site, "TEMPLATES", tmp_path / "nowhere")
    monkeypatch.setattr(site, "__file__", str(tmp_path / "evolve" / "site.py"))
    assert site.templates_dir() == tmp_path / "evolve" / "leaderboard_site"

    assert proposer.default_prompts() == ROOT / "prompts"  # a checkout: the editable templates
    installed = tmp_path / "evolve"
    (installed / "prompts").mkdir(parents=True)
    monkeypatch.setattr(proposer, "__file__", str(installed / "proposer.py"))
    assert proposer.default_prompts() == installed / "prompts"

    import evolve.knowledge as knowledge

    assert knowledge.project_context() == ROOT / "context"
    (installed / "context_docs").mkdir()
    monkeypatch.setattr(knowledge, "__file__", str(installed / "knowledge.py"))
    assert knowledge.project_context() == installed / "context_docs"
