"""`evaluate`: one candidate up the rung ladder, in sandboxed children; the verdict is decided here, in the parent.

The children report observations (errors, metrics, times); this module applies the problem's policy, computes the
roofline from the measured peaks, and marks the rungs after the first failure as skipped.
"""
from __future__ import annotations

import math
import secrets
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import peaks as peak_cache
from .problem import load_problem
from .sandbox import SPARES
from .static_check import screen, summary

RUNGS = ("load", "compile", "run", "correctness", "benchmark", "roofline")
ROOFLINE_CEILING = 1.05


def default_cache_dir() -> Path:
    return Path.home() / ".cache" / "evolve"


@dataclass(frozen=True)
class EvalOptions:
    device: str = "auto"  # auto | cuda | cpu
    timeout_s: float = 600.0
    max_rss_gb: float = 32.0
    bench_budget_s: float = 0.4
    dump_dir: str | None = None
    static_check: bool = True  # off only to test the sandbox's dynamic defences on their own
    cache_dir: str = field(default_factory=lambda: str(default_cache_dir()))
    keep_work: bool = False
    prewarm: bool = False  # start the next evaluation's child while this one runs (for loops over many candidates)


def gpu_available() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:  # noqa: BLE001 - a broken torch install means no GPU for us
        return False


_REPORTED: dict[str, str] = {}  # the device name children last reported, per mode (the parent starts no CUDA)


def _versions() -> dict:
    import torch
    import triton

    return {"torch": torch.__version__, "triton": triton.__version__}


def _jobs(mode: str) -> list[tuple[str, list[str]]]:
    if mode == "gpu":
        return [("gpu", ["load", "compile", "run", "correctness", "benchmark"])]
    return [("compile", ["load", "compile"]), ("interpret", ["run", "correctness", "benchmark"])]


def evaluate(candidate, problem_dir, options: EvalOptions = EvalOptions(), on_rung=None) -> dict:
    """Evaluate one candidate file against one problem folder; returns the verdict as a JSON-ready dict.

    on_rung(rung_dict) is called as each rung is decided (for live progress).
    """
    problem = load_problem(problem_dir)
    candidate = Path(candidate).resolve()
    mode = "gpu" if options.device == "cuda" or (options.device == "auto" and gpu_available()) else "cpu"
    secret = secrets.randbits(62)
    cache = Path(options.cache_dir)
    verdict = {"ok": False, "problem": problem.name, "candidate": str(candidate), "device": None, "mode": mode,
               "rungs": [], "fitness": None, "shapes": [], "secret": secret, "versions": {}, "setup": []}
    state = {"peaks": None, "mode": None, "spawned": 0.0, "late_failure": None}

    def decide(rung: dict) -> None:
        status = rung.get("status") or ("ok" if rung["ok"] else "failed")
        rung = {"name": rung["name"], "ok": bool(rung["ok"]), "status": status,
                "reason": rung.get("reason"), "seconds": rung.get("seconds", 0.0), "metrics": rung.get("metrics", {})}
        verdict["rungs"].append(rung)
        if on_rung:
            on_rung(rung)

    def on_message(message: dict) -> None:
        kind = message.get("kind")
        if kind == "rung":
            if not any(r["name"] == message["name"] for r in verdict["rungs"]):
                decide(message)
            elif not message.get("ok"):  # a late failure for a decided rung goes to the first undecided one
                state["late_failure"] = message
        elif kind == "device":
            verdict["device"] = message.get("device")
            verdict["versions"] = {"torch": message.get("torch"), "triton": message.get("triton")}
        elif kind == "setup":
            verdict["setup"].append({"mode": state["mode"], "wait_s": round(message["job_at"] - state["spawned"], 3),
                                     "warm_s": message["warm_s"], "prepare_s": message["prepare_s"]})
        elif kind == "peaks":
            state["peaks"] = message
            if not message.get("cached"):
                peak_cache.store(cache, message["key"], {"bandwidth": message["bandwidth"], "flops": message["flops"]})
        elif kind == "baseline":
            entry = peak_cache.load_cached(cache, message["key"], "baselines.json") or {}
            entry[message["case"]] = {k: v for k, v in message.items() if k not in ("kind", "key", "case")}
            peak_cache.store(cache, message["key"], entry, "baselines.json")

    # The static check needs no child: a rejected file costs milliseconds. The child repeats it on its own copy.
    started = time.perf_counter()
    try:
        problems = screen(candidate, problem.forbid_calls, problem.forbid_modules, options.static_check)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the checker must not take the parent down
        problems = [f"the static check could not judge the file: {type(exc).__name__}: {exc}"[:500]]
    if problems:
        decide({"name": "load", "ok": False, "reason": summary(problems), "seconds": time.perf_counter() - started,
                "metrics": {"violations": problems}})
    triton_cache = str(cache / "triton")
    for job_mode, rungs in ([] if problems else _jobs(mode)):
        child = SPARES.take(job_mode, triton_cache)
        try:
            candidate_copy = child.work / "candidate.py"
            shutil.copyfile(candidate, candidate_copy)
            job = {"mode": job_mode, "rungs": rungs, "problem": str(problem.path), "candidate": str(candidate_copy),
                   "secret": secret, "dump": options.dump_dir and str(Path(options.dump_dir).resolve()),
                   "bench_budget_s": options.bench_budget_s, "static_check": options.static_check,
                   "peaks": _read_json(cache / "peaks.json"), "baselines": _read_json(cache / "baselines.json")}
            state["mode"], state["spawned"] = job_mode, time.time()
            if options.prewarm:
                SPARES.prepare(job_mode, triton_cache)  # the next evaluation's child starts up while this one runs
            result = child.run(job, options.timeout_s, options.max_rss_gb, on_message)
        finally:
            if options.keep_work:
                verdict.setdefault("work", []).append(str(child.work))
            else:
                shutil.rmtree(child.work, ignore_errors=True)
        decided = {r["name"] for r in verdict["rungs"]}
        pending = [name for name in rungs if name not in decided]
        if pending and not any(not r["ok"] for r in verdict["rungs"]):
            late = state.pop("late_failure", None)
            if not result.finished:
                reason = result.death(options.timeout_s, options.max_rss_gb)
            elif late is not None:
                reason = f"{late['name']}: {late['reason']}"
            else:
                reason = "the evaluation ended without deciding this rung"
            decide({"name": pending[0], "ok": False, "reason": reason, "seconds": result.seconds})
        if any(not r["ok"] for r in verdict["rungs"]):
            break
    if verdict["device"] is None:  # no child reported one (the static check rejected the file, or it died first)
        verdict["device"] = _REPORTED.get(mode) or ("cuda" if mode == "gpu" else "cpu")
    else:
        _REPORTED[mode] = verdict["device"]
    if not verdict["versions"]:
        verdict["versions"] = _versions()
    if all(r["ok"] for r in verdict["rungs"]) and any(r["name"] == "benchmark" for r in verdict["rungs"]):
        decide(_roofline(verdict, state["peaks"], mode))
    failed = False
    for name in RUNGS:
        if not any(r["name"] == name for r in verdict["rungs"]):
            verdict["rungs"].append({"name": name, "ok": False, "status": "skipped", "seconds": 0.0, "metrics": {},
                                     "reason": "skipped: an earlier rung failed" if failed or verdict["rungs"] else
                                     "skipped"})
        failed = failed or any(r["name"] == name and r["status"] == "failed" for r in verdict["rungs"])
    verdict["rungs"].sort(key=lambda r: RUNGS.index(r["name"]))
    verdict["ok"] = not any(r["status"] == "failed" for r in verdict["rungs"]) and any(
        r["name"] == "benchmark" and r["status"] == "ok" for r in verdict["rungs"])
    return verdict


def _read_json(path: Path) -> dict:
    import json

    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _roofline(verdict: dict, peaks: dict | None, mode: str) -> dict:
    bench = next(r for r in verdict["rungs"] if r["name"] == "benchmark")
    rows = bench["metrics"].get("shapes", [])
    if mode != "gpu":
        verdict["shapes"] = [_shape_row(row, None) for row in rows]
        return {"name": "roofline", "ok": True, "status": "skipped", "seconds": 0.0, "metrics": {},
                "reason": "no GPU: interpreter times are not GPU performance, so there is no roofline or fitness"}
    if not peaks:
        return {"name": "roofline", "ok": False, "reason": "no device peaks were measured", "metrics": {}}
    shapes = [_shape_row(row, peaks) for row in rows]
    verdict["shapes"] = shapes
    fractions = [s["roofline_fraction"] for s in shapes]
    over = [s for s in shapes if s["roofline_fraction"] > ROOFLINE_CEILING]
    metrics = {"peaks": {"bandwidth": peaks["bandwidth"], "flops": peaks["flops"]}, "fractions": fractions}
    if over:
        worst = max(over, key=lambda s: s["roofline_fraction"])
        return {"name": "roofline", "ok": False, "metrics": metrics,
                "reason": f"{worst['case']}: {worst['roofline_fraction']:.2f} of roofline is above "
                          f"{ROOFLINE_CEILING}: a measurement error or a cheat, not a record"}
    fitness = math.exp(sum(math.log(max(f, 1e-12)) for f in fractions) / len(fractions))
    verdict["fitness"] = fitness
    return {"name": "roofline", "ok": True, "metrics": {**metrics, "fitness": fitness},
            "reason": f"fitness {fitness:.2f} (geomean fraction of roofline over {len(fractions)} benchmark shapes)"}


def _shape_row(row: dict, peaks: dict | None) -> dict:
    out = {"case": row["case"], "shape": row["shape"], "dtype": row["dtype"], "ms": row["ms"],
           "speedup_vs_torch": row["torch_ms"] / row["ms"] if row.get("torch_ms") and row["ms"] else None,
           "speedup_vs_compile": row["compile_ms"] / row["ms"] if row.get("compile_ms") and row["ms"] else None,
           "roofline_fraction": None, "bytes_per_s": row["bytes"] / (row["ms"] * 1e-3) if row["ms"] else None,
           "clock": row.get("clock", "cuda-events"), "hidden_work": row.get("hidden_work", False)}
    if peaks:
        flops_peak = peaks["flops"].get(row["dtype"], peaks["flops"]["float32"])
        bound_s = max(row["bytes"] / peaks["bandwidth"], row["flops"] / flops_peak)
        out["roofline_fraction"] = bound_s / (row["ms"] * 1e-3)
        out["bound_ms"] = bound_s * 1e3
    return out
