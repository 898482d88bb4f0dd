"""Each evaluation's share of the card's memory (harness/parent/device_share.py). No driver runs here: the driver's
table is played by a function that names the evaluation's real processes, as libnvidia-ml names them on a card;
everything around it (the parent's polls, the kill, the failed rung, a neighbour's verdict evaluated again) is the real
code. The last test runs it against the driver on a card."""
import time
from pathlib import Path

import pytest

from evolve.harness.parent import device_share, ladder
from evolve.harness.shared import processes
from evolve.harness.parent.device_share import Card, DeviceShare, Sighting
from evolve.harness.shared.formats import load_problem
from evolve.pipeline import harness_fault

ROOT = Path(__file__).resolve().parents[1]
SOFTMAX = ROOT / "tests" / "adversarial" / "problem"
SOLUTIONS = ROOT / "problems" / "softmax" / "solutions"
HONEST = SOLUTIONS / "correct" / "single_block.py"
GIB = 2**30


def _table(cards):
    return lambda: [Card(total, dict(held)) for total, held in cards]


def test_over_its_share_is_stopped_and_seen_by_its_neighbours_only():
    held = {101: 9 * GIB, 102: 1 * GIB}  # its keeper and runner; the measurer (100) is not counted
    hog = DeviceShare("hog", per_gpu=2, read=_table([(16 * GIB, {100: 5 * GIB, **held})]))
    neighbour = DeviceShare("neighbour", per_gpu=2, read=_table([(16 * GIB, {200: GIB})]))
    elsewhere = DeviceShare("elsewhere", per_gpu=2, read=_table([(16 * GIB, {}), (16 * GIB, {300: GIB})]))
    for share, pid in ((neighbour, 201), (elsewhere, 301)):
        assert share.check({pid}, {pid - 1}) is None
    reason = hog.check({101, 102}, {100})
    assert "held 10.0 GiB of the card's memory, over its share of 8.0 GiB" in reason
    assert "over 2 evaluations sharing it (--per-gpu)" in reason
    later = DeviceShare("later", per_gpu=2, read=_table([(16 * GIB, {400: GIB})]))
    later.check({401}, {400})
    assert hog.neighbour_over() is None  # its own failure is its own
    assert "another evaluation on this card held 10.0 GiB, over its share of 8.0 GiB" in neighbour.neighbour_over()
    assert elsewhere.neighbour_over() is None  # another card
    assert later.neighbour_over() is None  # it started after the sighting


def test_within_its_share_and_an_uncounted_evaluation_are_said():
    within = DeviceShare("within", per_gpu=4, read=_table([(16 * GIB, {100: 9 * GIB, 101: 4 * GIB})]))
    assert within.check({101}, {100}) is None  # 4 GiB is a quarter of 16; the measurer's 9 are the problem's
    assert "a share of the card's memory (1/4) counted by the driver" in within.note()
    hidden = DeviceShare("hidden", per_gpu=1, read=_table([(16 * GIB, {7: 15 * GIB})]))
    assert hidden.check({101}, {100}) is None
    assert hidden.uncounted() and "device memory uncounted" in hidden.note()


def _evaluation(path, share_of, options):
    """An evaluation whose share reads `share_of(its processes)` as the driver's table."""
    evaluation = ladder._Evaluation(Path(path), load_problem(SOFTMAX), options)

    def table():
        crew = evaluation.crew
        counted = set(crew.cgroup.pids() if crew.cgroup is not None else ()) or \
            processes.tree([p.pid for name, p in crew.procs.items() if name != "measurer"])
        return share_of(counted, crew.procs["measurer"].pid)

    evaluation.share = DeviceShare(f"test-{time.monotonic()}", options.per_gpu, read=table)
    evaluation.run()
    return evaluation.verdict()


def test_an_evaluation_over_its_share_is_killed_and_its_rung_failed(options):
    from dataclasses import replace

    def over(counted, measurer):
        return [Card(80 * GIB, {measurer: GIB, **{pid: 12 * GIB for pid in counted}})]

    verdict = _evaluation(SOLUTIONS / "correct" / "single_block.py", over, replace(options, per_gpu=6))
    bad = [r for r in verdict.rungs if r.failed]
    assert len(bad) == 1 and "over its share of 13.3 GiB" in bad[0].reason and "(killed)" in bad[0].reason, \
        verdict.rungs
    assert harness_fault(verdict) is None  # charged to it: not evaluated again
    assert "a share of the card's memory (1/6)" in verdict.jail


def test_a_failure_beside_an_evaluation_over_its_share_is_evaluated_again(options):
    from dataclasses import replace

    def beside_a_hog(counted, measurer):
        if not device_share.SIGHTINGS.others("", {0}, time.monotonic() - 1):  # the hog, seen once while it runs
            device_share.SIGHTINGS.add(Sighting(0, "a hog", time.monotonic(), 70 * GIB, 40 * GIB))
        return [Card(80 * GIB, {measurer: GIB, **{pid: GIB for pid in counted}})]

    verdict = _evaluation(SOLUTIONS / "wrong" / "missing_tail.py", beside_a_hog, replace(options, per_gpu=2))
    failure = verdict.failure
    assert failure is not None and failure.name == "correctness", verdict.rungs
    assert "another evaluation on this card held 70.0 GiB, over its share of 40.0 GiB" in failure.reason
    assert harness_fault(verdict) == failure.reason  # the lane puts it back in line, charged to no one


@pytest.mark.gpu
def test_on_a_card_a_candidate_holding_the_cards_memory_is_stopped_and_its_neighbour_not_charged(tmp_path, options):
    """Two evaluations side by side on the card (--per-gpu 2): one holds all the card's free memory but 2 GiB from
    import on, and computes honestly; the driver's table shows it over half the card, so it fails, and the honest
    one beside it passes or is evaluated again, never charged."""
    import textwrap
    import threading
    from dataclasses import replace

    from kernels import SOFTMAX_KERNEL

    from evolve.harness import evaluate

    hog = tmp_path / "hog.py"
    hog.write_text(SOFTMAX_KERNEL + textwrap.dedent('''
        FREE, _ = torch.cuda.mem_get_info()
        HELD = torch.empty(FREE - 2 * 2**30, dtype=torch.uint8, device="cuda")

        def custom_kernel(x):
            return launch(x)
    '''))
    both = replace(options, per_gpu=2, static_check=False)
    verdicts = {}
    threads = [threading.Thread(target=lambda name=name, path=path: verdicts.__setitem__(
        name, evaluate(path, SOFTMAX, both))) for name, path in (("hog", hog), ("honest", HONEST))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    hog_failure = verdicts["hog"].failure
    assert hog_failure is not None and "over its share" in hog_failure.reason, verdicts["hog"].rungs
    honest = verdicts["honest"]
    assert honest.ok or harness_fault(honest), honest.rungs
