"""What a tool answers about a candidate (tool_registry.py), the same from the MCP server and in an agent session:
a one-line summary, then JSON. Built from a verdict as `Verdict.to_json` writes it, and from the compiler files an
evaluation wrote (asm)."""
from __future__ import annotations

import json

LAST_RUNG = {"compile": "compile", "asm": "compile", "check": "correctness", "time": "benchmark",
             "evaluate": "benchmark"}  # the last rung each tool's evaluation climbs
ADVICE = "advice, not a verdict: only a program timed on every benchmark case ranks"


def compile_device(language: str, device: str) -> str:
    """Where the compile and asm tools compile: cpu (sm_90a, off the card) where the language compiles without a GPU,
    else `device`."""
    from .lang import get

    return device if get(language).without_gpu == "none" else "cpu"


def default_cases(problem, on_gpu: bool) -> list[str]:
    """The case `time` takes when it is named none: the problem's first for the mode it will be timed in."""
    cases = problem.benchmarks if on_gpu else problem.cpu_benchmarks
    return [cases[0].label] if cases else []


def compact(verdict: dict) -> dict:
    """The verdict with the compile rung's kernels listed once per distinct specialization, with a count."""
    out = dict(verdict)
    rungs = []
    for rung in verdict.get("rungs", []):
        kernels = (rung.get("metrics") or {}).get("kernels") if rung.get("name") == "compile" else None
        if kernels:
            distinct: dict = {}
            for kernel in kernels:
                key = json.dumps(kernel, sort_keys=True)
                distinct.setdefault(key, dict(kernel, specializations=0))["specializations"] += 1
            out["kernels_compiled"] = list(distinct.values())
            rung = dict(rung, metrics={k: v for k, v in rung["metrics"].items() if k != "kernels"})
        rungs.append(rung)
    out["rungs"] = rungs
    return out


def _kernels_line(kernels: list) -> str:
    return "; kernels: " + ", ".join(f"{k.get('name')} x{k.get('specializations')} ({k.get('regs')} registers, "
                                     f"{k.get('spills')} spills)" for k in kernels) if kernels else ""


def _head(tool: str, verdict: dict, shown: list) -> str:
    """The first line: the rung it failed at and why, or what passed."""
    failed = next((r for r in shown if r.get("status") == "failed"), None)
    if failed is not None:
        return f"failed at {failed.get('name')}: {str(failed.get('reason') or '')[:300]}"
    if tool == "compile":
        return "compiled"
    if tool == "check":
        return "runs and is correct on the test shapes"
    shapes = verdict.get("shapes", [])
    if tool == "time":
        return "timed (" + ADVICE + "): " + ", ".join(
            f"{s.get('case')} {s.get('ms', 0):.4g} ms" + (f" = {s['roofline_fraction']:.3f} of its roofline"
                                                          if s.get("roofline_fraction") is not None else "")
            for s in shapes)
    if verdict.get("fitness") is not None:
        return f"passed: fitness {verdict['fitness']:.3f} of the roofline over {len(shapes)} cases"
    return f"passed on the {verdict.get('mode')} path ({len(shapes)} cases timed, no roofline)"


def ladder_answer(tool: str, verdict: dict) -> str:
    """evaluate, compile, check or time: the summary line, then the verdict's JSON up to the tool's last rung."""
    whole = compact(verdict)
    last = LAST_RUNG[tool]
    names = [r.get("name") for r in whole["rungs"]]
    shown = whole["rungs"][: names.index(last) + 1] if last in names else whole["rungs"]
    kernels = whole.get("kernels_compiled", [])
    head = _head(tool, verdict, shown) + _kernels_line(kernels)
    if tool == "evaluate":
        return f"{head}\n{json.dumps(whole, indent=1)}"
    body: dict = {"ok": not any(r.get("status") == "failed" for r in shown), "rungs": shown, "kernels": kernels}
    if tool == "time":
        keep = ("case", "ms", "roofline_fraction", "bound_ms", "speedup_vs_torch", "spread", "windows")
        body.update(advice=ADVICE, cases=[{k: s.get(k) for k in keep if k in s} for s in verdict.get("shapes", [])])
    return f"{head}\n{json.dumps(body, indent=1)}"


def asm_answer(names: list[str], read, kind: str, kernel: str | None, whose: str) -> str:
    """One specialization's `kind` from an evaluation's compiler files (names; read(name) -> bytes), bounded by the
    caller; SASS is disassembled from the cubin where no .sass file was written."""
    if kind not in ("sass", "ptx", "ttgir", "ttir", "llir"):
        raise ValueError(f"kind is one of sass, ptx, ttgir, ttir, llir; not {kind!r}")
    wanted = [n for n in names if n.endswith(f".{kind}") and (not kernel or str(kernel) in n)]
    if kind == "sass" and not wanted:
        wanted = [n for n in names if n.endswith(".cubin") and (not kernel or str(kernel) in n)]
    if not wanted:
        kinds = sorted({n.split("_", 1)[-1].rsplit(".", 1)[0] for n in names if "_" in n})
        return (f"no {kind} kept for {whose}" + (f" matching {kernel!r}" if kernel else "")
                + (f"; its kernels: {', '.join(kinds)}" if kinds else ""))
    data = read(wanted[0]) or b""
    if wanted[0].endswith(".cubin"):
        from .harness.runner.sass import disassemble

        return disassemble(data) or "no cuobjdump here to read the cubin with"
    others = f" ({len(wanted) - 1} more specializations: name one with kernel)" if len(wanted) > 1 else ""
    return f"// {wanted[0]}{others}\n" + data.decode(errors="replace")
