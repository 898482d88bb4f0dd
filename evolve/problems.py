"""`evolve init` (a new problem folder, every field commented) and `evolve check-problem` (is a problem sound?).

check-problem runs the problem's own code as the harness would, then the ladder on its kernels, and reports each
fault as one line naming the file and what to do. It writes nothing into the problem.
"""
from __future__ import annotations

import difflib
import re
import tempfile
from dataclasses import replace
from pathlib import Path

SCAFFOLD = Path(__file__).resolve().parent / "scaffold"
# scaffold file -> where it goes in the new folder
LAYOUT = {"problem.toml": "problem.toml", "reference.py": "reference.py", "notes.md": "notes.md",
          "seed.py": "seeds/seed.py", "wrong_tail.py": "solutions/wrong/wrong_tail.py"}
EXPECT = re.compile(r"#\s*expect:\s*(ok|(load|compile|run|correctness|benchmark|roofline):\s*(.+))\s*$")
# Any line of that form heading a file: test metadata for check-problem (solutions/*/ files start with one), not part
# of the kernel, so neither an exported file nor a prompt shows it (strip_test_header).
HEADER = re.compile(r"#\s*expect\s*:")
# The keys problem.toml's tables hold (docs/problems.md; the loader is evolve/harness/shared/formats/native.py, which
# checks the [[test]], [[benchmark]] and [[cpu_benchmark]] entries' keys itself). A key outside these is a misspelling
# the loader would pass over: `call = [...]` under [forbid] would forbid nothing.
TOML_KEYS = {
    "": ("name", "description", "dtypes", "seeds", "output_dtypes", "tolerance", "test", "benchmark",
         "cpu_benchmark", "forbid", "languages", "accepts"),
    "forbid": ("calls", "modules"),
    "tolerance.<dtype>": ("rtol", "floor", "min_cosine"),
}


def init_problem(folder) -> list[Path]:
    """Write a new problem folder from the scaffold; refuses a folder that exists and is not empty."""
    folder = Path(folder)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise FileExistsError(f"{folder} exists and is not an empty folder: nothing written")
    name = folder.resolve().name
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_\-]*", name):
        raise ValueError(f"{name!r}: a problem's name (its folder's name) takes letters, digits, '_' and '-'")
    written = []
    for source, target in LAYOUT.items():
        path = folder / target
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text((SCAFFOLD / source).read_text().replace("{{name}}", name).replace("{{folder}}", str(folder)))
        written.append(path)
    (folder / "solutions" / "correct").mkdir(parents=True, exist_ok=True)
    return written


def expectation(path: Path) -> tuple[str | None, str | None] | None:
    """(rung, reason fragment) a solution's first line expects, (None, None) for ok, None when it says nothing."""
    lines = path.read_text().splitlines()
    match = EXPECT.match(lines[0]) if lines else None
    if not match:
        return None
    if match.group(1) == "ok":
        return None, None
    return match.group(2), match.group(3).strip().lower()


def strip_test_header(source: str) -> str:
    """The source without the `# expect: ...` line(s) it starts with, as exports and prompts show it; the archive
    keeps the source as it came."""
    lines = source.splitlines(keepends=True)
    skip = 0
    while skip < len(lines) and HEADER.match(lines[skip]):
        skip += 1
    return "".join(lines[skip:]) if skip else source


def _unknown(where: str, keys, known, noun: str = "key") -> list[str]:
    faults = []
    for key in sorted(k for k in keys if k not in known):
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        faults.append(f"{where} has an unknown {noun} {key!r}{hint}; the known {noun}s are {', '.join(known)}")
    return faults


def toml_key_faults(target) -> list[str]:
    """One line per key of an evolve problem.toml that no table holds (an empty list for other formats, and for a
    file that does not parse: loading it says why)."""
    from .harness.shared.problem import KNOWN_DTYPES

    toml_path = Path(target) / "problem.toml"
    if not toml_path.is_file():
        return []
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    try:
        raw = tomllib.loads(toml_path.read_text())
    except (tomllib.TOMLDecodeError, OSError, UnicodeDecodeError):
        return []
    faults = _unknown(f"{toml_path}: the top level", raw, TOML_KEYS[""])
    forbid = raw.get("forbid")
    if isinstance(forbid, dict):
        faults += _unknown(f"{toml_path}: [forbid]", forbid, TOML_KEYS["forbid"])
    tolerance = raw.get("tolerance")
    if isinstance(tolerance, dict):
        faults += _unknown(f"{toml_path}: [tolerance]", tolerance, KNOWN_DTYPES, "dtype")
        for dtype, entry in tolerance.items():
            if dtype in KNOWN_DTYPES and isinstance(entry, dict):
                faults += _unknown(f"{toml_path}: [tolerance.{dtype}]", entry, TOML_KEYS["tolerance.<dtype>"])
    return faults


def _todos(problem) -> list[str]:
    """Every TODO left in the problem's own files, a line each; a foreign folder's reference is upstream's, as it
    ships, and not looked at."""
    if problem.format != "evolve":
        return []
    faults = []
    root = problem.folder
    files = [problem.reference_path] + ([problem.path / "problem.toml", problem.path / "notes.md"]
                                        if problem.format == "evolve" else [])
    files += problem.seed_files() + problem.solution_files("correct") + problem.solution_files("wrong")
    for path in files:
        if not path.is_file():
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if "TODO" in line:
                faults.append(f"{path.relative_to(root)}:{number}: TODO left: {line.strip()[:100]}")
    return faults


def _reference_faults(problem, notes: list, timeout_s: float) -> list[str]:
    """harness/runner/reference_faults.py's check, run in a jailed child (harness/parent/jailed.py): the problem's
    functions are its author's code, and a folder from elsewhere (a KernelBench file) is code from anywhere."""
    from .harness.parent import jailed

    answer = jailed.ask("reference_faults", {"problem": str(problem.path)}, timeout_s, runner_user=False)
    if "faults" not in answer:
        return [f"{problem.reference_path.name}: running its functions on the test cases gave no answer "
                f"({answer.get('error')})"]
    notes.extend(answer["notes"])
    return list(answer["faults"])


def check_problem(target, device: str = "auto", timeout_s: float = 300.0, progress=None) -> list[str]:
    """Every fault of a problem, one line each; an empty list means it is sound. progress(line) hears each step."""
    from .harness import EvalOptions, ProblemError, evaluate, load_problem

    say = progress or (lambda line: None)
    try:
        problem = load_problem(target)
    except ProblemError as exc:
        return [str(exc)]
    faults = toml_key_faults(problem.path) if problem.format == "evolve" else []
    if faults:
        return faults  # a misspelt key is a setting silently not made: nothing else means much until it is fixed
    faults = _todos(problem)
    from .harness.parent.problem_facts import cannot_run_here, too_large_here
    from .harness.parent.ladder import gpu_available

    # the reference runs on the host here whatever the device: its memory is checked on any machine
    elsewhere = cannot_run_here(problem) if device == "cpu" or not gpu_available() else too_large_here(problem)
    if elsewhere:
        return [elsewhere]  # nothing of it can run here
    say(f"{problem.name}: running the reference on {len(problem.tests)} test case(s)")
    notes: list = []
    faults += _reference_faults(problem, notes, timeout_s)
    for note in notes:
        say(note)
    if faults:
        return faults  # the kernels' verdicts mean nothing while the problem itself is broken
    root = problem.folder
    if problem.format != "evolve":
        kept = set(problem.solution_files("correct") + problem.solution_files("wrong"))
        for path in sorted((problem.path / "solutions").glob("*/*.py")):
            if path not in kept:
                say(f"{path.relative_to(root)}: upstream's own, with no '# expect:' line: not one of evolve's tests")
    seeds = problem.seed_files()
    if problem.format == "evolve" and not seeds:
        faults.append("seeds/: no seed kernel; add one honest, simple, correct kernel")
    wrong = problem.solution_files("wrong")
    if problem.format == "evolve" and not wrong:
        faults.append("solutions/wrong/: empty; add kernels wrong in the ways this op invites, so the tolerances "
                      "are seen to reject them")
    with tempfile.TemporaryDirectory(prefix="evolve-check-") as cache:
        options = EvalOptions(device=device, timeout_s=timeout_s, cache_dir=cache)
        for language in problem.languages:  # the first's files at the top, another's in folders of its name
            files = problem.seed_files(language) + problem.solution_files("correct", language) + \
                (wrong if language == problem.languages[0] else problem.solution_files("wrong", language))
            for path in files:
                name = str(path.relative_to(root))
                say(f"{name}: evaluating")
                verdict = evaluate(path, problem.path, replace(options, language=language))
                fault = _judged(name, path, verdict)
                if fault:
                    faults.append(fault[:400])
    return faults


def _judged(name: str, path: Path, verdict) -> str | None:
    """What is wrong with a seed's or solution's verdict against what its place and first line expect, or None. A
    rung the machine could not run (a language without an interpreter, without a GPU) is said, not faulted."""
    kind = next((part for part in reversed(path.parts[:-1]) if part in ("seeds", "correct", "wrong")), "wrong")
    expected = (None, None) if kind in ("seeds", "correct") else expectation(path)
    failed = next((r for r in verdict.rungs if r.failed), None)
    skipped_here = not verdict.ok and failed is None and any(  # rungs this machine could not run
        r.status == "skipped" and "no GPU" in (r.reason or "") for r in verdict.rungs)
    if expected == (None, None):
        if verdict.ok or skipped_here:
            return None
        rung = f"{failed.name}: {failed.reason}" if failed else "no rung failed, yet it did not pass"
        return f"{name}: must pass and fails at {rung}"
    if skipped_here and expected is not None:
        return None  # its rung needs a GPU here: compiled only
    if verdict.ok or failed is None:
        return f"{name}: passes every rung: the tests or tolerances admit a known-wrong kernel"
    if expected is None:
        return (f"{name}: first line must say '# expect: <rung>: <reason fragment>' (it failed at "
                f"{failed.name}: {failed.reason})")
    rung, fragment = expected
    if failed.name != rung or fragment not in (failed.reason or "").lower():
        return f"{name}: expected to fail at {rung} ({fragment!r}), failed at {failed.name}: {failed.reason}"
    return None

