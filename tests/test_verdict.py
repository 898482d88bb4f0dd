"""The verdict at the seams: frozen values whose status is the one fact, written as the `--json` schema and read
back."""
import dataclasses
import json

import pytest

from evolve.harness import RUNGS, RungResult, Verdict
from verdicts import ladder


def test_ok_is_derived_from_the_rungs_and_nothing_else():
    assert ladder().ok
    assert ladder(roofline="skipped").ok  # no GPU: the benchmark ran, the roofline had nothing to judge
    for name in RUNGS:
        verdict = ladder(failed=name)
        assert not verdict.ok and verdict.failure.name == name and verdict.failure.reason == f"{name} broke"
    without_benchmark = dataclasses.replace(ladder(), rungs=tuple(r for r in ladder().rungs if r.name != "benchmark"))
    assert not without_benchmark.ok  # nothing failed, but nothing was timed either


def test_frozen_and_checked():
    verdict = ladder()
    with pytest.raises(dataclasses.FrozenInstanceError):
        verdict.fitness = 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        verdict.rungs[0].status = "failed"
    with pytest.raises(ValueError, match="status 'passed'"):
        RungResult("load", "passed")


def test_json_has_the_eval_schema_and_reads_back_equal():
    shapes = ({"case": "fp32 8x8", "ms": 0.01, "spread": 0.01},)
    for verdict in (ladder(shapes=shapes), ladder(failed="correctness"), ladder(roofline="skipped")):
        data = json.loads(json.dumps(verdict.to_json()))
        assert set(data) == {"ok", "problem", "candidate", "device", "mode", "rungs", "fitness", "shapes", "secret",
                             "versions", "setup", "jail"}
        assert data["ok"] is verdict.ok
        for rung, written in zip(verdict.rungs, data["rungs"]):
            assert set(written) == {"name", "ok", "status", "reason", "seconds", "metrics"}
            assert written["ok"] is (written["status"] == "ok")  # one fact, written twice for JSON readers
        assert Verdict.from_json(data) == verdict
    kept = dataclasses.replace(ladder(), work=("/tmp/evolve-work-1",))
    assert kept.to_json()["work"] == ["/tmp/evolve-work-1"] and Verdict.from_json(kept.to_json()) == kept


def test_verdicts_from_before_statuses_read_with_their_gaps():
    old = {"ok": False, "rungs": [{"name": "load", "ok": True}, {"name": "compile", "ok": False, "reason": "boom"}]}
    verdict = Verdict.from_json(old)
    assert [(r.name, r.status) for r in verdict.rungs] == [("load", "ok"), ("compile", "failed")]
    assert verdict.failure.reason == "boom" and not verdict.ok and verdict.shapes == () and verdict.device == ""
    assert not Verdict.from_json({"ok": True}).ok  # no rungs: nothing shows it passed
