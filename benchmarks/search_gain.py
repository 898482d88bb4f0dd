"""What the embedded search (no model: the problem's own kernels, the tuner, the composer) gains over each problem's
seed in a fixed time. One `evolve run` per problem, each in a fresh archive; prints one table: seed fitness, best
fitness, the gain, the best's proposer and how many candidates it took, and the per-case best: for each benchmark case
the highest figure any kernel of the run reached there, their geometric mean, which is the most a shape-dispatch
composite of the run's kernels could score (where the gain is small and the per-case best is near the best, no kernel
the run evaluated is much faster than the best on any case).

    python benchmarks/search_gain.py [--minutes 5] [--device cuda] [--language NAME] [--jobs N] [--keep DIR]
                                     [PROBLEM ...]

--jobs N runs N problems' searches at once (on one GPU they take turns on the card: evolve's card lock lets one
process's evaluations on a card at a time, in turns of a minute, the longest waiting going next, so figures stay
clean while each search gets a share of the card's time); --keep DIR keeps each run's archive and its output (as it
goes). Each problem's row is printed as soon as its run ends; SIGTERM (a `timeout`'s) or Ctrl-C stops every run as
Ctrl-C stops one, and starts no other, so the rows of those that ran still print.

On a GPU each problem's row is followed by the copy ceiling of its memory-bound cases: the fraction of the roofline
a plain device copy of the same bytes reaches at that size (half read, half written, fresh buffers each call so the
L2 cache holds none of them, timed back to back with CUDA events), a two-pass kernel's (a read of the inputs, then
a copy), and the seed's figure. A seed near the ceiling on a case leaves no room there to any kernel; one far below
it leaves room the run did not find. The line ends on the most any kernel could gain over the seed at copy rate.

On a GPU each row is also followed by the best kernel's speed against torch (cuBLAS for matmul, SDPA for attention)
and torch.compile on every benchmark case, from its verdict: the figures the benchmark rung timed on the same inputs
and clock.

--language NAME runs every search in that language (`evolve run --language`): the problem's seeds in it, its tuner.

Default problems: softmax, rmsnorm, layernorm, cross_entropy, attention, matmul. On a machine without a GPU the
figures are interpreter scores (1 / ms), which rank kernels but mean nothing against the hardware.
"""
import argparse
import math
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from evolve.archive import Archive
from evolve.compose import case_value
from evolve.harness.measurer.exchange import nbytes_of

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ["softmax", "rmsnorm", "layernorm", "cross_entropy", "attention", "matmul"]


def row_line(row: dict) -> str:
    if "error" in row:
        return f"{row['problem']:<14} failed: {' '.join(row['error'])}"
    seed, best = row["seed"], row["best"]
    gain = f"{best.score / seed.score - 1:+.1%}" if seed and best and seed.score else "-"
    return (f"{row['problem']:<14} {row['device'][:24]:<24} {figure(seed):>7} {figure(best):>7} {gain:>7}  "
            f"{(best.proposer if best else '-'):<10} {row['taken'] or '-':>5} {row['evaluated']:>4} "
            f"{number(row['per_case'], best):>9}  {row['stop']}")


HEADER = (f"{'problem':<14} {'device':<24} {'seed':>7} {'best':>7} {'gain':>7}  {'best by':<10} {'taken':>5} "
          f"{'of':>4} {'per-case':>9}  stop")


def case_bests(archive: Archive, cands: list) -> dict:
    """The highest figure any of `cands` reached on each benchmark case (fraction of roofline on a GPU, 1 /
    interpreter ms on the CPU), over the cases every one of them was measured on."""
    best: dict = {}
    counts: dict = {}
    for cand in cands:
        verdict = archive.verdict(cand.id)
        if verdict is None or not verdict.ok:
            continue
        for row in verdict.shapes:
            value = case_value(row, verdict.mode == "gpu")
            if row.get("case") and value is not None:
                best[row["case"]] = max(best.get(row["case"], 0.0), value)
                counts[row["case"]] = counts.get(row["case"], 0) + 1
    return {label: value for label, value in best.items() if counts[label] == max(counts.values())}


def geometric_mean(values) -> float | None:
    values = list(values)
    return math.exp(sum(math.log(value) for value in values) / len(values)) if values else None


COPY_SPAN = 512 << 20  # bytes the copies rotate through: far beyond any L2 cache
COPY_CALLS, COPY_REPEATS = 64, 5
MEMORY_BOUND = 1.05  # a case whose bound is this much above its bytes' own time is bound by floating point work


def copy_ms(nbytes: int) -> float:
    """Milliseconds per call of a device copy moving nbytes (half read, half written)."""
    return device_ms(nbytes // 2, lambda src, dst: dst.copy_(src))


def read_ms(nbytes: int) -> float:
    """Milliseconds per call of a device sum reading nbytes: the pass a two-pass kernel adds before its copy."""
    return device_ms(nbytes, lambda src, dst: torch_sum(src))


def torch_sum(src):
    import torch

    return torch.sum(src[: len(src) // 4 * 4].view(torch.float32))


def device_ms(half: int, call) -> float:
    """Milliseconds per call(src, dst) on buffers of `half` bytes each, each call on buffers the previous calls did
    not touch (timed_ms)."""
    import torch

    half = max(4, half)
    pairs = [(torch.empty(half, dtype=torch.uint8, device="cuda"), torch.empty(half, dtype=torch.uint8, device="cuda"))
             for _ in range(max(2, -(-COPY_SPAN // (2 * half))))]
    return timed_ms(pairs, call)


def timed_ms(buffers: list, call) -> float:
    """Milliseconds per call(*buffers[i]) over the buffers in turn, after one call on each: median of COPY_REPEATS
    runs of COPY_CALLS calls queued back to back, timed with CUDA events."""
    import statistics

    import torch

    for pair in buffers:
        call(*pair)
    figures = []
    for _ in range(COPY_REPEATS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for i in range(COPY_CALLS):
            call(*buffers[i % len(buffers)])
        end.record()
        end.synchronize()
        figures.append(start.elapsed_time(end) / COPY_CALLS)
    return statistics.median(figures)


COPY_SHAPED = 0.25  # outputs within this share of the inputs' bytes: a copy moves what the case moves


def case_input_bytes(row: dict) -> int | None:
    """The bytes of a case's inputs from its verdict row's description, None where a dtype is not torch's."""
    try:
        return sum(nbytes_of(leaf["shape"], leaf["dtype"]) for leaf in row.get("inputs") or ()) or None
    except (AttributeError, KeyError, TypeError):
        return None


def ceilings(rows: list, time_copy, time_read, peak: float) -> list:
    """(case, the copy's fraction of the roofline, a two-pass kernel's, the seed's) per case of the seed's verdict rows
    that a copy describes: memory-bound, writing about as many bytes as it reads. A case's bytes are its achieved
    rate times its time; its copy's fraction is the bound over the copy's time (at most 1), a two-pass kernel's the
    bound over a read of the inputs and a copy (what a kernel pays that cannot hold what it reads until it writes);
    peak: the card's copy bandwidth in bytes a second, which tells a memory bound from a compute one."""
    out = []
    for row in rows:
        if not row.get("case") or not row.get("bytes_per_s") or not row.get("bound_ms"):
            continue
        nbytes = row["bytes_per_s"] * row["ms"] * 1e-3
        if row["bound_ms"] > MEMORY_BOUND * nbytes / peak * 1e3:
            continue  # bound by its floating point work: a copy says nothing about it
        read = case_input_bytes(row)
        if read is None or abs((nbytes - read) - read) > COPY_SHAPED * read:
            continue  # mostly reads (a loss) or mostly writes: not a copy's traffic
        copy = time_copy(int(nbytes))
        out.append((row["case"], min(1.0, row["bound_ms"] / copy),
                    min(1.0, row["bound_ms"] / (copy + time_read(read))), row["roofline_fraction"]))
    return out


def copy_room(found: list, bests: dict, seed_rows: list) -> float | None:
    """The most a kernel could gain over the seed (a ratio) where it reached, on each case of `found`, the higher of
    the run's per-case best and the copy's fraction, and elsewhere the run's per-case best."""
    seed = {row["case"]: case_value(row, True) for row in seed_rows if row.get("case")}
    copy = {case: fraction for case, fraction, _, _ in found}
    return geometric_mean(max(bests[case], copy.get(case, 0.0)) / seed[case] for case in bests if seed.get(case))


def ceiling_line(problem: str, found: list, room: float | None = None) -> str:
    if not found:
        return f"  {problem}: no case moves a copy's traffic (memory-bound, as many bytes written as read)"
    cases = ", ".join(f"{case} {copy:.3f} {two:.3f} ({seed:.3f})" for case, copy, two, seed in found)
    tail = f"; at copy rate there, at most {room - 1:+.1%} over the seed" if room else ""
    return f"  {problem} copy, two-pass ceiling (seed): {cases}{tail}"


def card_peak() -> float:
    """The card's copy bandwidth (bytes a second, both directions counted) on 1 GiB buffers: at most the roofline's
    (the faster of a copy and a read, harness/measurer/peaks.py), so a bound above the bytes' time at this rate is
    compute's."""
    return (1 << 30) / (copy_ms(1 << 30) * 1e-3)


RUNNING: list = []  # the evolve runs started, for a stop to reach
STOPPED = threading.Event()  # SIGTERM or Ctrl-C came: no further run starts


def stop_runs(signum, frame) -> None:
    """SIGTERM (a timeout's) or Ctrl-C: no further run starts, and each running one stops as on Ctrl-C (a Ctrl-C at
    the terminal reaches them itself), so its archive ends and its row prints."""
    STOPPED.set()
    for proc in list(RUNNING):
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)


def one(problem: str, minutes: float, device: str | None, folder: Path, language: str | None = None) -> dict:
    db = folder / f"{problem}.db"
    command = [sys.executable, "-m", "evolve.cli", "run", str(ROOT / "problems" / problem), "--budget",
               f"{int(minutes * 60)}s", "--db", str(db)] + (["--device", device] if device else []) + (
               ["--language", language] if language else [])
    began = time.monotonic()
    log = folder / f"{problem}.log"  # the run's output as it goes, for a slow or odd row
    if STOPPED.is_set():
        return {"problem": problem, "error": ["not run: stopped"]}
    with open(log, "w") as out:
        done = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        RUNNING.append(done)
        if STOPPED.is_set():  # the stop came while it started
            done.send_signal(signal.SIGINT)
        done.wait()
    seconds = time.monotonic() - began
    last = log.read_text(errors="replace").strip().splitlines()[-1:]
    if not db.is_file():
        return {"problem": problem, "error": last}
    archive = Archive(str(db))
    run = archive.runs()[-1]
    cands = [c for c in archive.candidates(run["id"]) if c.status == "evaluated"]
    seeds = [c for c in cands if c.proposer == "seed" and c.score is not None]
    best = archive.best(problem, run["id"])
    seed = max(seeds, key=lambda c: c.score) if seeds else None
    taken = next((i + 1 for i, c in enumerate(cands) if best is not None and c.id == best.id), None)
    verdict = archive.verdict(seed.id) if seed else None
    best_verdict = archive.verdict(best.id) if best else None
    bests = case_bests(archive, cands)
    return {"problem": problem, "device": run["device"], "seed": seed, "best": best, "taken": taken,
            "mode": verdict.mode if verdict else None, "seed_rows": list(verdict.shapes) if verdict else [],
            "best_rows": list(best_verdict.shapes) if best_verdict else [],
            "evaluated": len(cands), "seconds": seconds, "case_bests": bests,
            "per_case": geometric_mean(bests.values()), "stop": run["stop_reason"] if run["ended"] else
            f"the run did not end (exit code {done.returncode}): {last}"}


def against_torch_line(problem: str, rows: list) -> str:
    """The best kernel's speed-up over torch and torch.compile on each benchmark case, and their geometric means."""
    def ratio(value):
        return f"{value:.2f}x" if value else "-"

    cases = [f"{row['case']} {ratio(row.get('speedup_vs_torch'))}/{ratio(row.get('speedup_vs_compile'))}"
             for row in rows if row.get("case")]
    means = [geometric_mean(row[key] for row in rows if row.get(key))
             for key in ("speedup_vs_torch", "speedup_vs_compile")]
    return (f"{problem:<14} best vs torch/compile: geomean {ratio(means[0])}/{ratio(means[1])}; "
            + "; ".join(cases))


def figure(cand) -> str:
    if cand is None:
        return "-"
    return f"{cand.fitness:.3f}" if cand.fitness is not None else f"{cand.score:.4g}*"


def number(value: float | None, like) -> str:
    """A figure in the unit of `like`'s (fitness, or a starred interpreter score)."""
    if value is None:
        return "-"
    return f"{value:.3f}" if like is not None and like.fitness is not None else f"{value:.4g}*"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("problems", nargs="*", default=DEFAULT)
    parser.add_argument("--minutes", type=float, default=5.0, help="each run's budget [default: 5]")
    parser.add_argument("--device", default=None, help="cuda or cpu [default: evolve run's own choice]")
    parser.add_argument("--language", default=None,
                        help="the language of every search (triton, cutedsl, tilelang) [default: each problem's first]")
    parser.add_argument("--jobs", type=int, default=1, help="problems searched at once [default: 1]")
    parser.add_argument("--keep", type=Path, default=None,
                        help="keep each run's archive and output (PROBLEM.db, PROBLEM.log) in this folder")
    args = parser.parse_args()
    from concurrent.futures import ThreadPoolExecutor, as_completed

    signal.signal(signal.SIGTERM, stop_runs)
    signal.signal(signal.SIGINT, stop_runs)

    with tempfile.TemporaryDirectory(prefix="evolve-gain-") as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        print(HEADER, flush=True)
        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            futures = {pool.submit(one, problem, args.minutes, args.device, folder, args.language): problem
                       for problem in args.problems}
            rows = []
            for future in as_completed(futures):  # in the order the runs end
                rows.append(future.result())
                print(row_line(rows[-1]), flush=True)
        if any(row.get("mode") == "gpu" for row in rows):
            peak = card_peak()
            for row in rows:
                if row.get("mode") == "gpu":
                    found = ceilings(row["seed_rows"], copy_ms, read_ms, peak)
                    room = copy_room(found, row["case_bests"], row["seed_rows"])
                    print(ceiling_line(row["problem"], found, room), flush=True)
                    print(against_torch_line(row["problem"], row["best_rows"]), flush=True)
    print(f"(* interpreter score, 1 / ms: no GPU; taken: the best's place among the run's evaluated candidates; "
          f"{args.jobs} search{'es' if args.jobs != 1 else ''} at once)")


if __name__ == "__main__":
    main()
