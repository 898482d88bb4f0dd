"""A strategy is one file and one registration: one defined here, registered before the composer, proposes in a real
search (the evaluator is the test's), hears what became of its proposals through the ledger, and never holds the
search."""
import shutil

from evolve.archive import Archive
from evolve.config import RunConfig
from evolve.harness import EvalOptions
from evolve.strategies import REGISTERED, Entry, Proposal, Strategy, View, register
from test_search import MINI
from verdicts import ladder


class Widening(Strategy):
    """The best kernel with its chunk widened, once per chunk width."""
    name = "widening"

    def __init__(self):
        self.heard = []
        self.views = []

    def propose(self, island, view):
        self.views.append(view)
        best = view.best
        if best is None or '"CHUNK": 4096' not in best.source:
            return None
        return Proposal({"source": best.source.replace('"CHUNK": 4096', '"CHUNK": 8192'), "parent_ids": (best.id,),
                         "island": island, "generation": best.generation + 1, "proposer": "widening"}, self.name)

    def landed(self, landing, view):
        if landing.answers(self.name):
            self.heard.append((landing.cand.id, landing.cand.score, landing.fresh))


def test_a_registered_strategy_proposes_in_a_search_and_hears_its_verdicts(tmp_path):
    from evolve.search import Search

    made = []
    entry = Entry("widening", lambda services: made.append(Widening()) or made[-1])
    register(entry, before="composer")
    try:
        config = RunConfig(problem_dir=str(MINI), db=str(tmp_path / "a.db"), eval=EvalOptions(device="cpu"),
                           max_candidates=3, retime_top=0, artifacts=False)
        archive = Archive(tmp_path / "a.db")
        search = Search(config, archive, known_material=False,
                        evaluate=lambda path, problem, options: ladder(
                            fitness=0.6 if '"CHUNK": 8192' in open(path).read() else 0.5))
        summary = search.run()
        cands = archive.candidates(summary.run_id)
    finally:
        REGISTERED.remove(entry)
    (widening,) = made
    assert [c.proposer for c in cands][:2] == ["seed", "widening"]
    ours = next(c for c in cands if c.proposer == "widening")
    assert widening.heard == [(ours.id, ours.score, True)] and ours.score > cands[0].score
    assert summary.best.id == ours.id  # the search's best is the strategy's kernel
    assert all(isinstance(v, View) for v in widening.views)  # what it was handed: a view, never the search
    assert not any(isinstance(getattr(v, f), Search) for v in widening.views for f in View.__dataclass_fields__)
    archive.close()
    shutil.rmtree(search.work, ignore_errors=True)


def test_registering_a_name_twice_is_refused():
    import pytest

    with pytest.raises(ValueError, match="registered already"):
        register(Entry("tuner", lambda services: None))
