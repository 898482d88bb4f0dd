"""The tuner's knobs and trials: knobs inferred from a kernel's launch literals where it declares none, the regimes a
trial can aim at, trials aimed at a structure's weakest regime, and a composite drawn from settings each best in its
own regime."""
from pathlib import Path

import torch

from evolve import compose
from evolve.knobs import Tuner, apply_knobs, read_knobs, regime_value, regimes, structure_key

ROOT = Path(__file__).resolve().parents[1]
MULTI = (ROOT / "problems" / "softmax" / "solutions" / "correct" / "multi_row.py").read_text()  # declares no KNOBS
LABELS = ["fp32 4096x1024", "bf16 4096x1024", "fp32 8192x8192", "bf16 8192x8192", "fp32 4096x32768",
          "bf16 4096x32768"]

LAUNCH = '''\
import torch
import triton


def custom_kernel(x):
    y = torch.empty_like(x)
    kernel[(4,)](x, y, x.shape[1], BLOCK=256, ROWS=2, num_warps=4, EVEN=True)
    kernel[(4,)](x, y, x.shape[1], BLOCK=256, ROWS=4, num_warps=4)
    return y
'''


def test_a_kernel_without_knobs_is_tuned_through_its_launch_literals():
    knobs, space = read_knobs(LAUNCH)
    assert knobs == {"BLOCK": 256, "num_warps": 4, "EVEN": True}  # ROWS has two values: not a knob
    assert space["BLOCK"] == [64, 128, 256, 512, 1024] and space["EVEN"] == [True, False]
    tuned = apply_knobs(LAUNCH, {"BLOCK": 1024, "num_warps": 8})
    assert tuned.count("BLOCK=1024") == 2 and tuned.count("num_warps=8") == 2 and "ROWS=2" in tuned
    assert read_knobs(tuned)[0] == {"BLOCK": 1024, "num_warps": 8, "EVEN": True}
    assert structure_key(tuned) == structure_key(LAUNCH) != structure_key(LAUNCH.replace("ROWS=4", "ROWS=8"))


def test_a_computed_num_warps_is_scaled_so_the_kernel_still_chooses_per_shape():
    """A shipped solution computes num_warps per shape (4 for short rows, 16 for rows of 8,192 and more). One constant
    in its place gave every shape the same warps (2 warps on softmax's 131,072-wide rows, held whole, compiled for
    over 180 s on an H100); the knob is a factor of the kernel's own choice instead."""
    knobs, space = read_knobs(MULTI)
    assert knobs == {"num_warps_scale": 1} and space == {"num_warps_scale": [0.5, 1, 2, 4]}
    tuned = apply_knobs(MULTI, {"num_warps_scale": 2})
    assert "num_warps=max(1, min(32, int((num_warps) * 2))))" in tuned
    assert read_knobs(tuned) == ({"num_warps_scale": 2}, space) and structure_key(tuned) == structure_key(MULTI)
    line = next(line for line in tuned.splitlines() if "num_warps=max" in line)
    expression = line.split("num_warps=", 1)[1][:-1]
    assert [eval(expression, {"num_warps": w}) for w in (4, 8, 16)] == [8, 16, 32]  # 16 * 2 held to 32
    halved = apply_knobs(tuned, {"num_warps_scale": 0.5})  # from a tuned child: the factor of the kernel's own
    assert "int((num_warps) * 0.5)" in halved and "* 2" not in halved
    assert apply_knobs(halved, {"num_warps_scale": 1}) == MULTI
    seed = (ROOT / "problems" / "layernorm" / "seeds" / "layernorm_rows.py").read_text()  # KNOBS, and num_warps
    knobs, space = read_knobs(seed)  # computed for rows held whole: the single-block launch is scaled, the looped
    assert knobs["num_warps_scale"] == 1 and knobs["LOOP_WARPS"] == 8  # one keeps its KNOBS entry
    tuned = apply_knobs(seed, {"num_warps_scale": 2, "CHUNK": 2048})
    assert "num_warps=max(1, min(32, int((num_warps) * 2)))" in tuned and 'num_warps=KNOBS["LOOP_WARPS"]' in tuned
    assert read_knobs(tuned)[0] == {**knobs, "CHUNK": 2048, "num_warps_scale": 2}
    assert structure_key(tuned) == structure_key(seed)


def test_a_tuned_child_keeps_its_structures_knob_space():
    """A range inferred around a launch literal moves with the value a setting writes (BLOCK=1024 reads as 256..4096);
    tuning from a tuned child goes on in the structure's first space instead of asking optuna for a changed one,
    which it refuses ("CategoricalDistribution does not support dynamic value space": an evolve run on transpose died
    of it when a tuned child became the base)."""
    tuner = Tuner(seed=0, trials=40)
    base = LAUNCH
    for round_ in range(12):
        suggestion = tuner.suggest(base)
        if suggestion is None:
            break
        source, values, trial = suggestion
        assert values["BLOCK"] in [64, 128, 256, 512, 1024]  # the first space, whatever the base now writes
        tuner.tell(source, trial, 1.0 + round_ / 100, {label: 0.5 + round_ / 100 for label in LABELS})
        base = source  # the tuned child becomes the next base
    assert round_ >= 6
    tuner.remember(apply_knobs(LAUNCH, {"BLOCK": 4096}), {"BLOCK": 4096}, 2.0)  # outside the first space: left out
    assert all(values.get("BLOCK") != 4096 for values, _, _ in tuner.history[structure_key(LAUNCH)])


def test_regimes_are_a_dtype_each_and_the_two_halves_of_the_shapes():
    found = regimes(LABELS)
    assert found["fp32"] == ("fp32 4096x1024", "fp32 8192x8192", "fp32 4096x32768")
    assert found["bf16"] == ("bf16 4096x1024", "bf16 8192x8192", "bf16 4096x32768")
    assert set(found["smaller shapes"]) == {"bf16 4096x1024", "fp32 4096x1024", "bf16 8192x8192"}
    assert set(found["larger shapes"]) == set(LABELS) - set(found["smaller shapes"])
    assert regimes(["fp32 64x64"]) == {}  # one case: no part of it is a regime
    assert regime_value({"a": 0.25, "b": 1.0}, ("a", "b")) == 0.5 and regime_value({"a": 0.5}, ("a", "b")) is None


SOURCE = 'KNOBS = {"BLOCK": 1024, "num_warps": 4}\nKNOB_SPACE = {"BLOCK": [512, 1024, 2048], "num_warps": [2, 4, 8]}\n'


def figures(values: dict) -> dict:
    """Per-case fractions of a setting: num_warps 8 is what bf16 wants, BLOCK 2048 what fp32 wants."""
    fp32 = 0.8 if values["BLOCK"] == 2048 else 0.6
    bf16 = 0.9 if values["num_warps"] == 8 else 0.4
    return {label: fp32 if label.startswith("fp32") else bf16 for label in LABELS}


def test_every_second_trial_aims_at_the_weakest_regime_and_every_study_hears_every_result():
    tuner = Tuner(seed=3, trials=9)
    tuner.remember(SOURCE, {"BLOCK": 1024, "num_warps": 4}, 0.49, figures({"BLOCK": 1024, "num_warps": 4}))
    assert tuner.weakest(SOURCE)[0] == "bf16"  # 0.4 there against 0.6 in fp32
    aims = []
    for _ in range(6):
        source, values, handle = tuner.suggest(SOURCE)
        assert read_knobs(source)[0] == values
        aims.append(handle.regime)
        cases = figures(values)
        score = regime_value(cases, LABELS)
        tuner.tell(SOURCE, handle, score, cases)
    assert aims[0] is None and aims[1] in ("bf16", "fp32", "smaller shapes", "larger shapes")
    assert aims[1::2] == [a for a in aims[1::2] if a is not None] and None in aims[::2]
    key = structure_key(SOURCE)
    def settled(study):  # trials with a result (a duplicate a study asked for is pruned and asked again)
        return [t for t in study.trials if t.state.name != "PRUNED"]

    assert len(settled(tuner.studies[(key, None)])) == 7  # the remembered setting and six trials, aimed or not
    for regime in {a for a in aims if a}:
        study = tuner.studies[(key, regime)]
        assert len(settled(study)) == 7
        labels = regimes(LABELS)[regime]
        best = max((t for t in settled(study) if t.value is not None), key=lambda t: t.value)
        assert best.value == max(regime_value(figures(t.params), labels) for t in settled(study))


def test_a_composite_is_drawn_from_tuned_settings_each_best_in_its_own_regime():
    cases = [compose.Case(label, {("dtype", 0): "float32" if label.startswith("fp32") else "bfloat16",
                                  ("size", 0, 1): int(label.split("x")[1])}) for label in LABELS]
    fp32_best = apply_knobs(SOURCE, {"BLOCK": 2048}) + "\n\ndef custom_kernel(x):\n    return KNOBS\n"
    bf16_best = apply_knobs(SOURCE, {"num_warps": 8}) + "\n\ndef custom_kernel(x):\n    return KNOBS\n"
    parts = [compose.Part(1, fp32_best, figures({"BLOCK": 2048, "num_warps": 4})),
             compose.Part(2, bf16_best, figures({"BLOCK": 1024, "num_warps": 8}))]
    found = compose.plan(parts, cases, 0.7, 0.02)
    assert found is not None and sorted(found.parts) == [1, 2]
    namespace = {}
    exec(compile(found.source, "<composite>", "exec"), namespace)
    assert namespace["custom_kernel"](torch.empty(2, 300, dtype=torch.float32))["BLOCK"] == 2048
    assert namespace["custom_kernel"](torch.empty(2, 300, dtype=torch.bfloat16))["num_warps"] == 8


def test_under_the_interpreter_the_tuner_leaves_launch_options_as_written():
    """The CPU interpreter ignores num_warps: settings that differ only there time alike, so a CPU run's tuner
    varies the KNOBS entries alone (each such trial costs an interpreter evaluation, about a minute)."""
    from evolve.knobs import LAUNCH_KNOBS

    seed = (ROOT / "problems" / "layernorm" / "seeds" / "layernorm_rows.py").read_text()
    tuner = Tuner(seed=0, trials=40)
    tuner.ignored = LAUNCH_KNOBS
    seen = []
    while (suggestion := tuner.suggest(seed)) is not None:
        source, values, trial = suggestion
        seen.append(values)
        tuner.tell(seed, trial, 0.5)
    assert len(seen) == 36 - 1 and all("num_warps_scale" not in v for v in seen)  # KNOB_SPACE's grid but its own
    assert tuner.suggest(MULTI) is None  # its only knob is the scale of its computed num_warps


def test_a_scaled_num_warps_is_rewritten_whatever_comes_before_it_and_never_twice():
    """Column offsets count UTF-8 bytes: an accented string earlier on the launch's line once made every rewrite a
    syntax error. A num_warps read from KNOBS through a local name is that KNOBS entry's to tune, not scaled too. A
    structure whose only settings are the base's own and three others is spent after those three (it was never
    spent, and each later step asked optuna 20 times for nothing)."""
    accented = LAUNCH.replace("num_warps=4, EVEN=True)", 'num_warps=nw, EVEN=True)  # é').replace(
        "kernel[(4,)](x, y, x.shape[1], BLOCK=256, ROWS=2", 'kernel[(4,)](x, "é", x.shape[1], BLOCK=256, ROWS=2')
    accented = accented.replace("    y = torch.empty_like(x)\n", "    y = torch.empty_like(x)\n    nw = 4\n")
    tuned = apply_knobs(accented, {"num_warps_scale": 2})
    compile(tuned, "tuned.py", "exec")
    assert 'x, "é", x.shape[1], BLOCK=256, ROWS=2, num_warps=max(1, min(32, int((nw) * 2))), EVEN=True)' in tuned
    declared = 'KNOBS = {"num_warps": 4}\n\n\ndef custom_kernel(x):\n    nw = KNOBS["num_warps"]\n' \
               '    kernel[(4,)](x, num_warps=nw)\n'
    assert read_knobs(declared) == ({"num_warps": 4}, {"num_warps": [1, 2, 4, 8, 16]})
    tuner = Tuner(seed=0, trials=40)
    tried = []
    while (suggestion := tuner.suggest(MULTI)) is not None:
        tried.append(suggestion[1]["num_warps_scale"])
        tuner.tell(MULTI, suggestion[2], 0.5)
    assert sorted(tried) == [0.5, 2, 4] and tuner.exhausted(MULTI)
    assert len(tuner.studies[(structure_key(MULTI), None)].trials) < 20


def test_a_setting_recorded_with_a_knob_the_tuner_now_leaves_alone_still_seeds_new_studies():
    """A regime's study starts from every setting recorded for the structure; one recorded with num_warps_scale, a
    knob a CPU run's tuner leaves as written, once failed that study's start (KeyError: a CPU run of softmax closed
    as a crash of evolve's own)."""
    from evolve.knobs import LAUNCH_KNOBS

    seed = (ROOT / "problems" / "layernorm" / "seeds" / "layernorm_rows.py").read_text()
    knobs, _ = read_knobs(seed)
    labels = ["fp32 4096x2048", "bf16 4096x2048", "fp32 1024x32768", "bf16 1024x32768"]
    tuner = Tuner(seed=0, trials=40)
    tuner.remember(seed, knobs, 0.5, {label: 0.5 for label in labels})  # num_warps_scale among its values
    tuner.ignored = LAUNCH_KNOBS
    for _ in range(4):  # the second and fourth aim at a regime: a new study, seeded from the record
        source, values, trial = tuner.suggest(seed)
        assert "num_warps_scale" not in values
        tuner.tell(seed, trial, 0.5, {label: 0.4 + 0.1 * (label[0] == "f") for label in labels})
    assert any(regime is not None for _, regime in tuner.studies)
