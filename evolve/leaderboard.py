"""The leaderboard: models compared per problem and device, from one or more archives, as plain numbers.

Everything here is read from archives (`Archive.runs`, `Archive.timeline`, the best kernels' verdicts); nothing is
measured again. The rows group runs by (problem, model, language, device), where a run's model is its one `--model`
(as `evolve bench` runs it), the models of an ensemble joined with "+", or "embedded default", an agent's name
followed by " (agent)" (`--agent-model`, or every model with `--agent`), so a model's agent and one-shot runs are rows
of their own; and its language the candidate language it ran in. Figures from different
devices are never combined: every mean and every fast_p is taken within one device.

Definitions (docs/compare.md says the same):
- best: the highest fraction of roofline among the kernels the row's runs reported (standing.py: each run's best,
  the highest score unless the run held a near tie or a re-timed winner over it), correct and never failing a launch
  audit (GPU verdicts only;
  under the CPU interpreter there is no roofline and the row shows the interpreter's ranking score instead,
  `cpu_score`). `audit` is that kernel's launch audit (evolve/launch_audit.py): "passed", or "not run" (no audit on
  record, or none possible: the CPU interpreter, no Nsight Compute); a kernel that failed one is never the best.
- speed-up against torch eager / torch.compile: the geometric mean over the benchmark cases of the best kernel's
  per-case `speedup_vs_torch` / `speedup_vs_compile`.
- proposals: the model's own proposals (proposer "llm", invalid replies included); for the embedded default every
  evaluated candidate. correct rate = correct / proposals; compile-failure rate = failed at load or compile / proposals.
- fast_p (per model and device, over the problems present on that device): the share of problems where the model's
  best kernel is correct and more than p times faster than the baseline (p = 0 counts every correct one). Without a
  GPU verdict there is no speed-up (interpreter times against torch on the host mean nothing), and fast_p for p > 0
  is left blank rather than 0%.
- tokens, dollars, wall time: in all; until the first correct kernel the model wrote (any correct one for the
  embedded default); until the best kernel (both within the run that holds the best).
- dollars per correct kernel: dollars / correct proposals; per point of roofline: dollars / (100 * (best - the best
  seed's fraction in the same run)), where there was a gain.
- per submitted kernel (per proposal): dollars / proposals; evaluation seconds / proposals, where a proposal's
  seconds are its evaluation's (the rungs' wall time, `evaluations.seconds`: on the GPU, or on the host under the CPU
  interpreter) plus its agent session's tool calls' (`tool_calls.seconds`: the compiles and checks it ran before it
  submitted).
- model split (a run of several models, `split`): per model its proposals, their share, dollars, seconds and gain
  (model_split.py: the log of each kernel's score over its parent's, beyond the timing noise, summed), and gain per
  dollar, summed over the row's runs; `model_choice` says how the runs chose (the bandit, or by weight).
"""
from __future__ import annotations

import datetime
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .archive import Archive
from .config import format_duration
from .model_split import Split, run_split
from .proposer import ModelSpec
from .standing import run_leader

FAST_P = (0.0, 1.0, 1.5, 2.0)
EMBEDDED = "embedded default"


def model_label(options: dict) -> str:
    """A run's models as its rows name them: each one's name, an agent's followed by " (agent)" (every model of a
    run with --agent, whose options say so under "search"; a run from before agents is one-shot), joined with "+";
    "embedded default" without a model."""
    options = options or {}
    every_one = bool((options.get("search") or {}).get("agent"))
    labels = [ModelSpec(m["name"], agent=bool(m.get("agent")) or every_one).label
              for m in options.get("models") or [] if m.get("name")]
    return "+".join(labels) if labels else EMBEDDED


def geomean(values) -> float | None:
    values = [v for v in values if v is not None and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def _when(text: str | None) -> datetime.datetime | None:
    try:
        return datetime.datetime.fromisoformat(text) if text else None
    except ValueError:
        return None


def archive_tags(paths) -> dict[str, str]:
    """A short name per archive for page names and run keys: the file's stem, numbered where two share one
    (runs/evolve.db from two machines)."""
    stems = [Path(p).stem for p in paths]
    tags, used = {}, set(stems)
    for p, stem in zip(paths, stems):
        tag, n = stem, 1
        while stems.count(stem) > 1 and (tag == stem or tag in used):
            tag, n = f"{stem}{n}", n + 1
        used.add(tag)
        tags[str(p)] = tag
    return tags


@dataclass
class Run:
    """One run of one archive, with what the leaderboard reads of it."""

    db: str
    id: int
    problem: str
    model: str
    device: str
    versions: dict
    started: str
    ended: str | None
    stop_reason: str | None
    bench: dict | None
    candidates: list[dict] = field(default_factory=list)  # Archive.timeline
    language: str = "triton"  # the candidate language the run asked for
    tag: str = ""  # the archive's short name (archive_tags)
    gaps: list = field(default_factory=list)  # [from, to] times the run was stopped before a resume
    best_id: int | None = None  # the kernel the run reported as its best when it stopped (standing.py)
    split: Split | None = None  # how a run of several models split its proposals among them (model_split.py)

    def _idle_before(self, moment: datetime.datetime) -> float:
        idle = 0.0
        for start, end in self.gaps:
            a, b = _when(start), _when(end)
            if a and b and b <= moment:
                idle += max(0.0, (b - a).total_seconds())
        return idle

    @property
    def key(self) -> str:
        return f"{self.tag or Path(self.db).stem}-{self.id}"

    def seconds_at(self, cand: dict) -> float | None:
        """Wall seconds from the run's start until this candidate's verdict."""
        start, made = _when(self.started), _when(cand.get("created"))
        if start is None or made is None:
            return None
        return max(0.0, (made - start).total_seconds() - self._idle_before(made)
                   + float(cand.get("eval_seconds") or 0.0))

    def wall_seconds(self) -> float | None:
        """Seconds the run was running: from start to end, less the gaps before each resume."""
        start, end = _when(self.started), _when(self.ended)
        if start and end:
            return max(0.0, (end - start).total_seconds() - self._idle_before(end))
        done = [self.seconds_at(c) for c in self.candidates if c["status"] == "evaluated"]
        return max((d for d in done if d is not None), default=None)

    def progress(self) -> list[dict]:
        """The best score so far after each evaluated candidate: candidates, dollars and seconds spent until then."""
        out, best, cost = [], None, 0.0
        n = 0
        for c in self.candidates:
            cost += float(c["cost"] or 0.0)
            if c["status"] != "evaluated":
                continue
            n += 1
            value = c["fitness"] if c["fitness"] is not None else c["score"]
            if c["ok"] and c.get("audit") != "failed" and value is not None and (best is None or value > best):
                best = value
            out.append({"candidates": n, "dollars": cost, "seconds": self.seconds_at(c), "best": best,
                        "id": c["id"]})
        return out


def load_runs(paths, problems=None, devices=None) -> list[Run]:
    """Every run of the given archives (filtered by problem and device names), with its candidates."""
    runs = []
    unique = {}
    for path in paths:  # the same file given twice (or spelt two ways) is read once
        unique.setdefault(Path(path).resolve(), path)
    paths = list(unique.values())
    tags = archive_tags(paths)
    for path in paths:
        archive = Archive(path, read_only=True)
        try:
            for r in archive.runs():
                if problems and r["problem"] not in problems:
                    continue
                if devices and r["device"] not in devices:
                    continue
                options = r.get("options") or {}
                run = Run(db=str(path), id=r["id"], problem=r["problem"], model=model_label(options),
                          device=r["device"] or "unknown", versions=r.get("versions") or {}, started=r["started"],
                          ended=r.get("ended"), stop_reason=r.get("stop_reason"), bench=options.get("bench"),
                          tag=tags[str(path)], gaps=r.get("gaps") or [], language=r.get("language") or "triton",
                          best_id=r.get("best_id"))
                run.candidates = archive.timeline(r["id"])
                run.split = run_split(archive, r["id"], run.candidates)
                runs.append(run)
        finally:
            archive.close()
    return runs


@dataclass
class Spend:
    tokens: int = 0
    dollars: float = 0.0
    seconds: float | None = None


@dataclass
class Row:
    """One (problem, model, language, device)."""

    problem: str
    model: str
    device: str
    runs: list[str]
    language: str = "triton"
    best: float | None = None  # fraction of roofline (GPU)
    cpu_score: float | None = None  # the interpreter's ranking score, where there is no roofline
    best_candidate: dict | None = None  # {"db", "run", "id", "proposer"}
    audit: str | None = None  # the best kernel's launch audit: "passed" or "not run"
    vs_eager: float | None = None
    vs_compile: float | None = None
    seed: float | None = None  # the best seed's fraction in the run of the best
    proposals: int = 0
    correct: int = 0
    compile_failures: int = 0
    correct_rate: float | None = None
    compile_failure_rate: float | None = None
    total: Spend = field(default_factory=Spend)
    to_first_correct: Spend | None = None
    to_best: Spend | None = None
    dollars_per_correct: float | None = None
    dollars_per_point: float | None = None
    dollars_per_proposal: float | None = None  # per submitted kernel
    eval_seconds_per_proposal: float | None = None  # its evaluation and its agent session's compiles and checks
    model_choice: str | None = None  # an ensemble's: "bandit" or "weights" ("bandit+weights" where its runs differ)
    split: list[dict] = field(default_factory=list)  # an ensemble's, per model (model_splits)
    versions: dict = field(default_factory=dict)
    date: str = ""


def _spend_until(run: Run, cand_id: int) -> Spend:
    upto = [c for c in run.candidates if c["id"] <= cand_id]
    target = next(c for c in run.candidates if c["id"] == cand_id)
    return Spend(tokens=sum(int(c["tokens_in"] or 0) + int(c["tokens_out"] or 0) for c in upto),
                 dollars=sum(float(c["cost"] or 0.0) for c in upto), seconds=run.seconds_at(target))


def _own(run: Run, c: dict) -> bool:
    """A candidate the row's model is judged on: its own LLM proposals (every one, for the embedded default)."""
    return c["proposer"] == "llm" if run.model != EMBEDDED else True


def _value(c: dict) -> float | None:
    """What a kernel is ranked by: its fraction of roofline, or the interpreter's score where it has none."""
    return c["fitness"] if c["fitness"] is not None else c["score"]


def build_row(problem: str, model: str, language: str, device: str, runs: list[Run], verdict_of) -> Row:
    row = Row(problem=problem, model=model, device=device, runs=[r.key for r in runs], language=language)
    best_run, best_cand, best_value = None, None, None
    eval_seconds = 0.0  # of the row's proposals: their evaluations and their agent sessions' tool calls
    for run in runs:
        for c in run.candidates:
            if _own(run, c) and (c["status"] == "evaluated" or (c["proposer"] == "llm" and c["status"] == "invalid")):
                row.proposals += 1
                row.correct += bool(c["ok"])
                row.compile_failures += c["failed_rung"] in ("load", "compile")
                eval_seconds += float(c["eval_seconds"] or 0.0) + float(c["tool_seconds"] or 0.0)
            row.total.tokens += int(c["tokens_in"] or 0) + int(c["tokens_out"] or 0)
            row.total.dollars += float(c["cost"] or 0.0)
        leader = run_leader(run.candidates, run.best_id, _value)  # the kernel the run reported (standing.py)
        if leader is not None and (best_value is None or _value(leader) > best_value):
            best_run, best_cand, best_value = run, leader, _value(leader)
    row.model_choice, row.split = model_splits(runs)
    seconds = [r.wall_seconds() for r in runs]
    row.total.seconds = sum(s for s in seconds if s is not None) if any(s is not None for s in seconds) else None
    if row.proposals:
        row.correct_rate = row.correct / row.proposals
        row.compile_failure_rate = row.compile_failures / row.proposals
        row.dollars_per_proposal = row.total.dollars / row.proposals
        row.eval_seconds_per_proposal = eval_seconds / row.proposals
    if row.correct:
        row.dollars_per_correct = row.total.dollars / row.correct
    newest = max(runs, key=lambda r: r.started or "")
    row.versions, row.date = newest.versions, (newest.started or "")[:10]
    if best_cand is None:
        return row
    row.best_candidate = {"db": best_run.db, "archive": best_run.tag, "run": best_run.id, "id": best_cand["id"],
                          "proposer": best_cand["proposer"]}
    row.audit = "passed" if best_cand.get("audit") == "passed" else "not run"
    if best_cand["fitness"] is not None:
        row.best = best_cand["fitness"]
    else:
        row.cpu_score = best_cand["score"]
    verdict = verdict_of(best_run.db, best_cand["id"])
    # Interpreter times against torch on the host say nothing of a kernel's speed: no speed-up without a GPU verdict.
    shapes = verdict.get("shapes", []) if verdict and best_cand["fitness"] is not None else []
    row.vs_eager = geomean(s.get("speedup_vs_torch") for s in shapes)
    row.vs_compile = geomean(s.get("speedup_vs_compile") for s in shapes)
    row.to_best = _spend_until(best_run, best_cand["id"])
    first = next((c for c in best_run.candidates if c["ok"] and c.get("audit") != "failed" and _own(best_run, c)),
                 None)
    row.to_first_correct = _spend_until(best_run, first["id"]) if first else None
    seeds = [c["fitness"] for c in best_run.candidates if c["proposer"] == "seed" and c["ok"] and
             c["fitness"] is not None]
    if seeds and row.best is not None:
        row.seed = max(seeds)
        gain = row.best - row.seed
        if gain > 0 and row.total.dollars > 0:
            row.dollars_per_point = row.total.dollars / (100 * gain)
    return row


def model_splits(runs: list[Run]) -> tuple[str | None, list[dict]]:
    """(how the runs chose their models, per model its proposals, share, dollars, seconds, gain and gain per dollar
    over the runs), for runs of several models; (None, []) otherwise."""
    totals: dict[str, dict] = {}
    choices = sorted({run.split.choice for run in runs if run.split is not None})
    for run in runs:
        for s in run.split.shares if run.split is not None else ():
            t = totals.setdefault(s.model, {"model": s.model, "proposals": 0, "dollars": 0.0, "seconds": 0.0,
                                            "gain": 0.0})
            t["proposals"] += s.proposals
            t["dollars"] += s.dollars
            t["seconds"] += s.seconds
            t["gain"] += s.gain
    asked = sum(t["proposals"] for t in totals.values())
    for t in totals.values():
        t["share"] = t["proposals"] / asked if asked else None
        t["gain_per_dollar"] = t["gain"] / t["dollars"] if t["dollars"] > 0 else None
    return "+".join(choices) or None, list(totals.values())


@dataclass
class Summary:
    """One (model, language, device): fast_p and geometric means over the problems on that device."""

    model: str
    language: str
    device: str
    problems: int  # problems on this device in the comparison
    solved: int  # with a correct kernel
    fast_eager: dict
    fast_compile: dict
    geomean_best: float | None
    geomean_vs_eager: float | None
    geomean_vs_compile: float | None
    dollars: float
    tokens: int


def summarize(rows: list[Row]) -> list[Summary]:
    out = []
    for device in sorted({r.device for r in rows}):
        on_device = [r for r in rows if r.device == device]
        problems = sorted({r.problem for r in on_device})
        for model, language in sorted({(r.model, r.language) for r in on_device}):
            mine = {r.problem: r for r in on_device if (r.model, r.language) == (model, language)}
            solved = [r for r in mine.values() if r.best_candidate is not None]

            def fast(attr, p):
                if not any(getattr(r, attr) is not None for r in solved):
                    return None  # no speed-up measured (CPU interpreter verdicts): not 0%
                hits = sum(1 for r in solved if getattr(r, attr) is not None and getattr(r, attr) > p)
                return hits / len(problems) if problems else None

            out.append(Summary(
                model=model, language=language, device=device, problems=len(problems), solved=len(solved),
                fast_eager={f"{p:g}": (len(solved) / len(problems) if p == 0 else fast("vs_eager", p))
                            for p in FAST_P},
                fast_compile={f"{p:g}": (len(solved) / len(problems) if p == 0 else fast("vs_compile", p))
                              for p in FAST_P},
                geomean_best=geomean(r.best for r in solved), geomean_vs_eager=geomean(r.vs_eager for r in solved),
                geomean_vs_compile=geomean(r.vs_compile for r in solved),
                dollars=sum(r.total.dollars for r in mine.values()), tokens=sum(r.total.tokens for r in mine.values())))
    return out


@dataclass
class Board:
    rows: list[Row]
    summaries: list[Summary]
    runs: list[Run]
    generated: str

    def to_json(self) -> dict:
        return {"generated": self.generated, "rows": [asdict(r) for r in self.rows],
                "models": [asdict(s) for s in self.summaries],
                "runs": [{"key": r.key, "db": r.db, "id": r.id, "problem": r.problem, "model": r.model,
                          "language": r.language, "device": r.device, "versions": r.versions, "started": r.started,
                          "ended": r.ended, "stop_reason": r.stop_reason, "bench": r.bench, "progress": r.progress()}
                         for r in self.runs]}


def board(paths, problems=None, devices=None) -> Board:
    runs = load_runs(paths, problems, devices)
    archives: dict[str, Archive] = {}

    def verdict_of(db: str, cand_id: int):
        if db not in archives:
            archives[db] = Archive(db, read_only=True)
        return archives[db].evaluation(cand_id)

    groups: dict[tuple, list[Run]] = {}
    for run in runs:
        groups.setdefault((run.problem, run.model, run.language, run.device), []).append(run)
    try:
        rows = [build_row(p, m, lang, d, rs, verdict_of) for (p, m, lang, d), rs in sorted(groups.items())]
    finally:
        for a in archives.values():
            a.close()
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return Board(rows=rows, summaries=summarize(rows), runs=runs, generated=now)


# --- the terminal table -----------------------------------------------------------------------------------------

def _f(value, fmt="{:.3f}", none="-") -> str:
    return none if value is None else fmt.format(value)


def _pct(value) -> str:
    return _f(None if value is None else 100 * value, "{:.0f}%")


TEXT_WIDTH = 100  # the terminal tables' widest line


def text_lines(b: Board) -> list[str]:
    """Per device: each problem's results, what each cost in all and per proposal, and each model's summary and
    fast_p, every line at most TEXT_WIDTH characters (--json and the site hold the same figures)."""
    out = []
    for device in sorted({r.device for r in b.rows}):
        rows = [r for r in b.rows if r.device == device]
        versions = rows[0].versions
        who = _Who(rows)
        language = "" if who.languages else f"; language {rows[0].language}"
        out.append(f"{device}  (torch {versions.get('torch', '?')}, triton {versions.get('triton', '?')}; "
                   f"newest run {max(r.date for r in rows)}{language})")
        out += _results(rows, who) + [""] + _spend(rows, who) + [""] + _per_proposal(rows, who) + [""]
        out += _splits(rows, who)
        summaries = [s for s in b.summaries if s.device == device]
        out += _summaries(summaries, who) + [""] + _fast_p(summaries, who) + [""]
    return out or ["no runs"]


class _Who:
    """The columns that name a row: problem and model, each as wide as its longest name (at most 14 and 27
    characters), and language where the device's rows use several (else the device's line names it)."""

    def __init__(self, rows):
        self.problem = min(max([len("problem")] + [len(r.problem) for r in rows]), 14) + 1
        self.model = min(max([len("model")] + [len(r.model) for r in rows]), 27) + 1
        self.languages = len({r.language for r in rows}) > 1

    def __call__(self, problem: str | None, model: str, language: str) -> str:
        head = f"  {problem[:self.problem - 1]:<{self.problem}}" if problem is not None else "  "
        return f"{head}{model[:self.model - 1]:<{self.model}}" + (f"{language[:8]:<9}" if self.languages else "")


def _results(rows, who) -> list[str]:
    out = [f"{who('problem', 'model', 'language')}{'best':>7} {'kernel':>8}{'vs eager':>9}{'vs compile':>11}"
           f"{'correct':>8}{'compile✗':>9}"]
    for r in rows:
        best = _f(r.best) if r.best is not None else (_f(r.cpu_score, "{:.3g}") + "*" if r.cpu_score else "-")
        kernel = f"#{r.best_candidate['id']}" + ("" if r.audit == "passed" else "°") if r.best_candidate else "-"
        out.append(f"{who(r.problem, r.model, r.language)}{best:>7} {kernel:>8}{_f(r.vs_eager, '{:.2f}x'):>9}"
                   f"{_f(r.vs_compile, '{:.2f}x'):>11}{_pct(r.correct_rate):>8}{_pct(r.compile_failure_rate):>9}")
    if any(r.best is None and r.cpu_score for r in rows):
        out.append("  * no GPU: the CPU interpreter's ranking score, not a fraction of roofline")
    if any(r.best_candidate and r.audit != "passed" for r in rows):
        out.append("  ° launch audit not run on this kernel (no GPU, or no Nsight Compute): what ran on the device")
        out.append("    was not seen from outside it")
    return out


def _spend(rows, who) -> list[str]:
    out = [f"{who('problem', 'model', 'language')}{'tokens':>8}{'$':>8}{'wall':>7}{'$→1st':>8}{'$→best':>8}"
           f"{'$/ok':>8}{'$/pt':>8}"]
    for r in rows:
        out.append(f"{who(r.problem, r.model, r.language)}{r.total.tokens:>8}{r.total.dollars:>8.4f}"
                   f"{format_duration(r.total.seconds, compact=True):>7}"
                   f"{_f(r.to_first_correct and r.to_first_correct.dollars, '{:.4f}'):>8}"
                   f"{_f(r.to_best and r.to_best.dollars, '{:.4f}'):>8}{_f(r.dollars_per_correct, '{:.4f}'):>8}"
                   f"{_f(r.dollars_per_point, '{:.4f}'):>8}")
    out.append("  $→1st, $→best: spent until the first correct kernel and until the best; $/ok: per correct kernel;")
    out.append("    $/pt: per point of fitness")
    return out


def _per_proposal(rows, who) -> list[str]:
    out = [f"{who('problem', 'model', 'language')}{'proposals':>10}{'$/proposal':>12}{'eval s/proposal':>17}"]
    for r in rows:
        out.append(f"{who(r.problem, r.model, r.language)}{r.proposals:>10}{_f(r.dollars_per_proposal, '{:.4f}'):>12}"
                   f"{_f(r.eval_seconds_per_proposal, '{:.1f}'):>17}")
    out.append("  $/proposal: dollars per kernel submitted; eval s/proposal: seconds of its evaluation (on the GPU,")
    out.append("    or on the host under the CPU interpreter) and of its agent session's compiles and checks")
    return out


def _splits(rows, who) -> list[str]:
    """Each ensemble's proposals per model, and how they were chosen; nothing where no row has several models."""
    split = [r for r in rows if r.split]
    if not split:
        return []
    out = [f"{who('problem', 'model split', 'language')}{'by':>7}{'asked':>7}{'share':>6}{'$':>9}{'gain':>8}"
           f"{'gain/$':>9}"]
    for r in split:
        for s in r.split:
            out.append(f"{who(r.problem, s['model'], r.language)}{r.model_choice[:6]:>7}{s['proposals']:>7}"
                       f"{_pct(s['share']):>6}{s['dollars']:>9.4f}{s['gain']:>8.3g}"
                       f"{_f(s['gain_per_dollar'], '{:.3g}'):>9}")
    out.append("  by: the bandit (gain per dollar, the weights its prior) or weights (at random by weight);")
    out.append("    gain: the log of each kernel's score over its parent's, beyond the timing noise, summed")
    return out + [""]


def _summaries(summaries, who) -> list[str]:
    out = [f"{who(None, 'model', 'language')}{'solved':>8}{'geomean best':>14}{'vs eager':>10}{'vs compile':>12}"
           f"{'$':>9}"]
    for s in summaries:
        out.append(f"{who(None, s.model, s.language)}{f'{s.solved}/{s.problems}':>8}{_f(s.geomean_best):>14}"
                   f"{_f(s.geomean_vs_eager, '{:.2f}x'):>10}{_f(s.geomean_vs_compile, '{:.2f}x'):>12}"
                   f"{s.dollars:>9.4f}")
    return out


def _fast_p(summaries, who) -> list[str]:
    ps = [f"{p:g}" for p in FAST_P]
    group = len(ps) * 6
    out = [f"{who(None, 'fast_p', '')}{'faster than eager by p':<{group + 2}}{'than torch.compile':<{group}}",
           f"{who(None, '', '')}{''.join(f'{p:>6}' for p in ps)}  {''.join(f'{p:>6}' for p in ps)}"]
    for s in summaries:
        eager = "".join(f"{_pct(s.fast_eager[p]):>6}" for p in ps)
        compiled = "".join(f"{_pct(s.fast_compile[p]):>6}" for p in ps)
        out.append(f"{who(None, s.model, s.language)}{eager}  {compiled}")
    out.append("  fast_p: the share of this device's problems whose best kernel is correct and more than p times")
    out.append("    as fast as the baseline (p=0: correct at all)")
    return out
