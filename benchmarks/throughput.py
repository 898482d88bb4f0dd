"""Search throughput: full evaluations per GPU-hour with a proposer that answers instantly, where the time goes, and
how busy the GPU was. Prints a table.

    python benchmarks/throughput.py [--problem problems/softmax] [--candidates 30] [--device auto] [--gpus 0,1]
                                    [--per-gpu N|auto] [--minutes M] [--keep DB] [--progress]

The proposer returns the problem's seed with one module-level line changed per proposal (`_VARIANT = n`), so every
proposal is new to the archive (nothing is deduplicated away) and compiles and measures like the seed (with --slower
SHARE, that share of them call the seed's kernel twice and lose to it, as most proposals lose in a real run, so racing
the benchmark rung stops timing them early; --no-race times them whole), with as many
proposals in flight as evolve run keeps by default (--concurrency), each prompt's context built as a run builds it; no
knob tuner and no composites, no profiling and no re-timing at the end. Evaluations per GPU-hour are the candidates
evaluated over the run's wall time times the cards used (with --per-gpu N, N lanes share each card). A lane's time per
evaluation is split by rung from the verdicts: compile (load and compile), correctness (run and correctness), timing
(benchmark), each less the time the evaluation was stopped for another's timing lease (--per-gpu), that time
("stopped"), and the rest (process start-up waits, inputs, teardown); "lane idle" is the share of the lanes' wall time
with no evaluation on them; "timing lease held" the share of the cards' wall time some evaluation held the card's timing
lease (harness/parent/lease.py: calibrations and benchmark windows, every other evaluation stopped). The cards' busy
fraction is read from the driver (`nvidia-smi --query-gpu=index,utilization.gpu` every 200 ms): the share of samples
above 0%, and their mean; the host's CPU busy share is read from /proc/stat every second over all its cores (an
evaluation's imports, compiles and host code are CPU work: where it nears 100%, cores bound the rate). A last line
splits the GPU crew's set-up (the wait for its job, its warm-up, the measurer's connect, lease wait and calibrations),
where most of "the rest" goes, and the parent's CPU seconds spent on each evaluation's memory reads (memory_poll_s; the
reads themselves run in reader processes, whose CPU seconds are memory_read_s: harness/parent/memory_reader.py). "parent
CPU" is the cores the run's own process kept busy (its lanes' threads share one interpreter lock: near 1.0, the parent
bounds the rate). With several lanes on a card, a last line gives the rate the card's timing lease allows (each
evaluation's time holding it, l, and working outside it, w: at most N / (w + N l) a second with N side by side, since
all stand still while one holds it; 1 / l with any number). The seed's fitness is reported from the first candidate (the
seed itself), so before/after figures can be compared with the same script.
"""
from __future__ import annotations

import argparse
import itertools
import resource
import shutil
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from evolve.archive import Archive
from evolve.config import LLMConfig, ProfileConfig, RunConfig, SearchConfig
from evolve.harness import EvalOptions, evaluate, load_problem
from evolve.harness.parent.lease import all_leases
from evolve.pipeline import lanes_per_card, parse_gpus, visible_gpus
from evolve.proposer import Proposal
from evolve.search import Search

ROOT = Path(__file__).resolve().parents[1]
BENCH_PARTS = ("warm", "inputs", "windows", "checks")  # the benchmark rung's own split (harness/measurer/rungs.py)
# the GPU crew's set-up (harness/parent/ladder.py's setup record and the measurer's prepare_split), in the order they
# happen, and the parent's own work after the verdict (keeping the dumps, killing the processes)
SETUP_PARTS = ("before_s", "wait_s", "warm_s", "runner_warm_s", "prepare_s", "connect", "lease", "peaks", "baselines",
               "hops", "plans", "after_s", "discard_s", "memory_poll_s", "memory_read_s")


class Instant:
    """Answers at once with the seed and one changed module-level line."""

    concurrency = LLMConfig().concurrency  # evolve run's --concurrency: as many proposals in flight as a run keeps

    def __init__(self, seed_source: str, slower: float = 0.0):
        self.seed, self.numbers = seed_source, itertools.count(1)  # proposals come from several threads
        self.slower = slower

    def propose(self, template, context, parent_source=None, toolbox=None) -> Proposal:
        n = next(self.numbers)
        source = self.seed.rstrip("\n") + f"\n\n_VARIANT = {n}\n"
        if (n * 0.6180339887) % 1.0 < self.slower:  # spread evenly: this share of proposals lose to the seed
            source += SLOWER
        return Proposal(source, None, template, "instant", "", "", 0, 0, 0.0, 0.0, 1)


# a proposal that loses: the seed's work done twice per call (about half its figure), correct all the same
SLOWER = """

_custom_kernel_once = custom_kernel


def custom_kernel(*inputs):
    _custom_kernel_once(*inputs)
    return _custom_kernel_once(*inputs)
"""


class GpuSampler:
    def __init__(self, cards: list[str], period_ms: int = 200):
        self.samples: list[float] = []
        self.proc = None
        if shutil.which("nvidia-smi") and cards:
            self.proc = subprocess.Popen(["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
                                          "-i", ",".join(cards), "-lms", str(period_ms)],
                                         stdout=subprocess.PIPE, text=True)
            threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                self.samples.append(float(line.strip()))
            except ValueError:
                pass

    def stop(self):
        if self.proc:
            self.proc.terminate()
            self.proc.wait()


class CpuSampler:
    """The share of all the host's cores that was busy, from /proc/stat every second."""

    def __init__(self):
        self.samples: list[float] = []
        self._stop = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    @staticmethod
    def _ticks():
        with open("/proc/stat") as f:
            values = [int(v) for v in f.readline().split()[1:]]
        return sum(values), values[3] + values[4]  # all, idle and waiting for I/O

    def _read(self):
        total, idle = self._ticks()
        while not self._stop.wait(1.0):
            now_total, now_idle = self._ticks()
            if now_total > total:
                self.samples.append(1 - (now_idle - idle) / (now_total - total))
            total, idle = now_total, now_idle

    def stop(self):
        self._stop.set()


def _own_cpu_s() -> float:
    """This process's CPU seconds, all its threads (not its children)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problem", default=str(ROOT / "problems" / "softmax"))
    parser.add_argument("--candidates", type=int, default=30)
    parser.add_argument("--device", default="auto", choices=["auto", "cuda", "cpu"])
    parser.add_argument("--gpus", default=None, help="cards, one lane each (e.g. 0,1); default: every visible one")
    parser.add_argument("--per-gpu", default="auto",
                        help="evaluations at once on each card, or auto (evolve run --per-gpu; the default, as there)")
    parser.add_argument("--no-fork-server", action="store_true",
                        help="start each evaluation's processes as interpreters of their own (for a before/after)")
    parser.add_argument("--progress", action="store_true", help="print each verdict and lane event as it comes")
    parser.add_argument("--minutes", type=float, default=None,
                        help="stop starting candidates that would end past this many minutes (the table covers "
                             "those evaluated; SIGTERM or Ctrl-C also stops the run and prints it)")
    parser.add_argument("--slower", type=float, default=0.0, metavar="SHARE",
                        help="this share of proposals do the seed's work twice a call, and lose to it (racing the "
                             "benchmark stops timing them early)")
    parser.add_argument("--no-race", action="store_true", help="time every case of every candidate (evolve run "
                                                               "--no-race)")
    parser.add_argument("--keep", metavar="DB", default=None,
                        help="keep the run's archive at this path (each verdict's records, for a closer look)")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # `timeout` ends the run as Ctrl-C would: a table
    problem = load_problem(args.problem)
    seed = problem.seed_files()[0].read_text()
    gpus = parse_gpus(args.gpus)
    per_gpu = lanes_per_card(args.per_gpu, args.device != "cpu" and bool(visible_gpus()), gpus)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "throughput.db"
        config = RunConfig(problem_dir=args.problem, db=str(db), max_candidates=args.candidates, seed=1,
                           search=SearchConfig(tune_share=0.0, compose_share=0.0, stagnation=10 ** 6),
                           eval=EvalOptions(device=args.device, prewarm=True, per_gpu=per_gpu,
                                            fork_server=not args.no_fork_server),
                           profile=ProfileConfig(top=0),
                           retime_top=0, gpus=tuple(gpus) if gpus else None, race=not args.no_race,
                           budget_s=args.minutes * 60 if args.minutes else None)
        archive = Archive(db)
        lanes_seen: list = []
        sampler = GpuSampler(list(gpus) if gpus else (visible_gpus() if args.device != "cpu" else []))
        cpu = CpuSampler()
        started, own_cpu = time.monotonic(), _own_cpu_s()
        walls: dict[str, float] = {}

        ends: list[float] = []
        spans: list[tuple[float, float]] = []  # every evaluation's start and end

        def timed(path, problem_path, options):  # the harness, with each evaluation's wall time noted
            began = time.monotonic()
            verdict = evaluate(path, problem_path, options)
            walls[Path(path).name] = time.monotonic() - began
            spans.append((began, time.monotonic()))
            if Path(path).name.startswith("candidate_"):  # not a best timed again beside a challenger
                ends.append(time.monotonic())
            return verdict

        def note(event):
            if event["kind"] == "lanes":
                lanes_seen.append(event)
            if args.progress and event["kind"] in ("lanes", "candidate", "lane_fault", "lane_retired", "unevaluated"):
                c = event.get("candidate")
                print(f"{time.monotonic() - started:7.1f} s  {event['kind']}  "
                      f"{c.id if hasattr(c, 'id') else c or ''} {getattr(c, 'reason', '') or ''} "
                      f"{event.get('reason') or ''} {event.get('lanes') or ''}", flush=True)

        summary = Search(config, archive, Instant(seed, args.slower), evaluate=timed,
                         on_event=note).run()
        wall = time.monotonic() - started
        parent_cores = (_own_cpu_s() - own_cpu) / wall
        sampler.stop()
        cpu.stop()
        cands = [c for c in archive.candidates(summary.run_id) if c.status == "evaluated"]
        split = {"compile": [], "correctness": [], "timing": [], "stopped": [], "rest of evaluation": []}
        eval_wall = []
        inside: dict = {k: [] for k in (*BENCH_PARTS, "plans", "hops")}
        windows: list = []
        setup_parts: dict = {}
        for c in cands:
            verdict = archive.verdict(c.id)
            # each rung's seconds less the time it was stopped for another evaluation's lease (--per-gpu)
            rungs = {r.name: r.seconds - float(r.metrics.get("stopped_s", 0.0)) for r in verdict.rungs}
            seconds = walls.get(f"candidate_{c.id}.py", 0.0)
            eval_wall.append(seconds)
            parts = {"compile": rungs.get("load", 0) + rungs.get("compile", 0),
                     "correctness": rungs.get("run", 0) + rungs.get("correctness", 0),
                     "timing": rungs.get("benchmark", 0)}
            stopped = verdict.setup[0].get("stopped_s", 0.0) if verdict.setup else 0.0
            parts["stopped"] = stopped if isinstance(stopped, (int, float)) else 0.0
            parts["rest of evaluation"] = max(0.0, seconds - sum(parts.values()))
            for k, v in parts.items():
                split[k].append(v)
            bench = next((r for r in verdict.rungs if r.name == "benchmark"), None)
            for k, v in ((bench.metrics.get("split") or {}) if bench else {}).items():
                if k in BENCH_PARTS:
                    inside[k].append(v)
            setup = (verdict.setup[0].get("prepare_split") or {}) if verdict.setup else {}
            for k in ("plans", "hops"):
                if isinstance(setup.get(k), (int, float)):
                    inside[k].append(setup[k])
            first_setup = verdict.setup[0] if verdict.setup else {}
            for k, v in [*first_setup.items(), *setup.items()]:  # where the rest of an evaluation goes
                if k in SETUP_PARTS and isinstance(v, (int, float)):
                    setup_parts.setdefault(k, []).append(v)
            windows.append(sum(row.get("windows", 0) for row in verdict.shapes))
        seed_fitness = cands[0].fitness if cands else None
        raced = sum(1 for c in cands if archive.verdict(c.id).raced)
        device = archive.run(summary.run_id)["device"]
        archive.close()
        if args.keep:
            shutil.copyfile(db, args.keep)
    n = len(cands)
    lanes = lanes_seen[0]["lanes"] if lanes_seen else ["?"]
    cards = len({lane.split(".")[0] for lane in lanes})  # --per-gpu N: lanes gpu0.1 .. gpu0.N share card 0
    lease_s = sum(lease.held_s for lease in all_leases())
    print(f"throughput: {problem.name}, {n} candidates on {device}, lanes {','.join(lanes)},"
          f" instant proposer{', no fork server' if args.no_fork_server else ''}, {args.slower:.0%} slower, "
          f"{'no race' if args.no_race else f'{raced} raced out'}, {time.strftime('%Y-%m-%d')}"
          f"{'' if not summary.interrupted else ', interrupted'}")
    print(f"| wall | evaluations per GPU-hour | wall per evaluation | lane time: {' | '.join(split)} | lane idle | "
          f"timing lease held | GPU busy | GPU util mean | host CPU busy | parent CPU | seed fitness |")
    print("| --- " * (11 + len(split)) + "|")
    per = wall / n if n else float("nan")
    idle = 1 - sum(eval_wall) / (wall * len(lanes)) if n else float("nan")
    busy = (sum(s > 0 for s in sampler.samples) / len(sampler.samples)) if sampler.samples else None
    util = statistics.mean(sampler.samples) if sampler.samples else None
    cells = [f"{statistics.mean(v):.2f} s" if v else "-" for v in split.values()]
    ends.sort()
    # the first evaluations on a machine also measure the card's peaks and the baselines (cached from then on), and
    # lanes that start together deliver their first verdicts together: the steady rate counts from the verdict that
    # completes one per lane
    first = min(len(lanes), len(ends))
    steady = (ends[-1] - ends[first - 1]) / (len(ends) - first) if len(ends) > first else float("nan")
    print(f"| {wall:.0f} s | {3600 / (per * cards):.0f} | {per:.2f} s | {' | '.join(cells)} | {idle:.0%} | "
          f"{lease_s / (wall * cards):.0%} | "
          f"{'-' if busy is None else f'{busy:.0%}'} | {'-' if util is None else f'{util:.0f}%'} | "
          f"{f'{statistics.mean(cpu.samples):.0%}' if cpu.samples else '-'} | {parent_cores:.2f} cores | "
          f"{'-' if seed_fitness is None else f'{seed_fitness:.3f}'} |")
    if windows:
        def mean_of(keys):
            return ", ".join(f"{k} {statistics.mean(inside[k]):.2f} s" for k in keys if inside[k])

        rung, setup = mean_of(BENCH_PARTS), mean_of(("plans", "hops"))
        print(f"per evaluation, mean: {statistics.mean(windows):.0f} timed windows"
              + (f"; benchmark rung: {rung}" if rung else "") + (f"; set-up's calibrations: {setup}" if setup else ""))
    if setup_parts:  # the median too: a fresh machine's first evaluations wait for its calibrations
        print("set-up, mean (median): " + ", ".join(
            f"{k} {statistics.mean(setup_parts[k]):.2f} ({statistics.median(setup_parts[k]):.2f}) s"
            for k in SETUP_PARTS if setup_parts.get(k)))
    if len(ends) > first:
        # the lanes' idle share between the verdict that completes one per lane and the last evaluation's start
        since, until = ends[first - 1], max(start for start, _ in spans)
        busy = sum(max(0.0, min(end, until) - max(start, since)) for start, end in spans)
        steady_idle = 1 - busy / (len(lanes) * (until - since)) if until > since else float("nan")
        print(f"after {'the first verdict' if first == 1 else f'the first {first} verdicts (one per lane)'} (which "
              f"also measured the card's peaks and baselines on a fresh machine): "
              f"{steady:.2f} s per evaluation, {3600 / (steady * cards):.0f} per GPU-hour, lanes idle "
              f"{steady_idle:.0%} until the last start")
    per_card = len(lanes) // cards if cards else 0
    if n and lease_s and per_card > 1:
        # N evaluations share a card; each works w s outside the lease and holds it l s, and all stand still while
        # one holds it: the card delivers at most N / (w + N l) evaluations a second, and 1 / l however many share it
        lease_per = lease_s / n
        outside = statistics.mean(eval_wall) - statistics.mean(split["stopped"]) - lease_per
        print(f"under the timing lease: each evaluation held it {lease_per:.2f} s and worked {outside:.2f} s outside "
              f"it, so a card gives at most {3600 * per_card / (outside + per_card * lease_per):.0f} per GPU-hour "
              f"with {per_card} side by side, and {3600 / lease_per:.0f} with any number")



if __name__ == "__main__":
    main()
