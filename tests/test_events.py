"""The events a run emits keep to their shapes (evolve/events.py): every place that emits one, read from the source,
and every event of a run, checked as it arrives; progress.py says a line for every kind but those only counted."""
import ast
from pathlib import Path

from verdicts import ladder

from evolve import events
from evolve.archive import Archive
from evolve.config import RunConfig
from evolve.harness import EvalOptions
from evolve.progress import LINES
from evolve.search import Search

PACKAGE = Path(__file__).resolve().parents[1] / "evolve"
MINI = Path(__file__).resolve().parent / "data" / "mini_softmax"


def _emitted() -> list[tuple[str, int, dict]]:
    """(file, line, {key: None}) for each dict literal with a constant "kind" handed to emit(...) or on_event(...)."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Dict)):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            keys = [k.value for k in node.args[0].keys if isinstance(k, ast.Constant)]
            if name in ("emit", "on_event") and "kind" in keys:
                kind = node.args[0].values[keys.index("kind")]
                found.append((path.name, node.lineno, {k: None for k in keys} | {"kind": kind.value}))
    return found


def test_every_place_that_emits_an_event_keeps_to_its_shape():
    emitted = _emitted()
    assert len(emitted) > 25 and {e["kind"] for _, _, e in emitted} == set(events.SHAPES)
    for file, line, event in emitted:
        assert events.check(event) is None, f"{file}:{line}: {events.check(event)}"


def test_a_stray_event_is_named():
    assert events.check({"kind": "lanes", "lanes": []}) == "lanes: missing gpu"
    assert events.check({"kind": "paused", "why": 1}) == "paused: extra why"
    assert events.check({"kind": "nope"}) == "unknown event kind 'nope'"


def test_the_events_of_a_run_keep_to_their_shapes(tmp_path):
    seen = []

    def watch(event):
        assert events.check(event) is None, events.check(event)
        seen.append(event["kind"])

    config = RunConfig(problem_dir=str(MINI), db=str(tmp_path / "a.db"), eval=EvalOptions(device="cpu"),
                       max_candidates=5, retime_top=0, artifacts=False)
    archive = Archive(tmp_path / "a.db")
    try:
        Search(config, archive, evaluate=lambda path, problem, options: ladder(fitness=0.5), on_event=watch,
               known_material=False).run()
    finally:
        archive.close()
    assert {"start", "lanes", "candidate"} <= set(seen)


def test_progress_says_a_line_for_every_kind_but_the_counted_one():
    assert set(LINES) == set(events.SHAPES) - {"duplicate"}
