"""Compiler artifacts kept in the archive: every evaluated candidate's TTIR, TTGIR, LLIR, PTX, cubin and SASS per
kernel specialization (compiled for sm_90a here, without a GPU), listed and printed by `evolve show --asm`, still
there in a copy of the archive file."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from evolve.archive import Archive
from evolve.config import RunConfig
from evolve.harness import EvalOptions
from evolve.search import Search

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "mini_softmax"


def evolve(*args):
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
    return subprocess.run([sys.executable, "-m", "evolve.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300)


def test_an_evaluated_candidate_keeps_its_compiler_output(tmp_path):
    db = tmp_path / "a.db"
    search = Search(RunConfig(problem_dir=str(MINI), db=str(db), eval=EvalOptions(device="cpu")), Archive(db))
    search.start()
    assert search.step("material", 0)  # the seed, through the real ladder under the interpreter
    search.drain()  # a step hands its candidate to the pipeline; its verdict comes in here
    seed = search.archive.candidates(search.run_id)[0]
    assert seed.ok
    names = [a["name"] for a in search.archive.artifacts.listing(seed.id)]
    for kind in ("ttir", "ttgir", "llir", "ptx", "cubin"):
        assert any(n.endswith(f"_softmax_row_kernel.{kind}") for n in names), names
    assert "index.txt" in names and b"sm_90a" in search.archive.artifacts.read(seed.id, "index.txt")
    ptx = next(n for n in names if n.endswith(".ptx"))
    assert b".target sm_90a" in search.archive.artifacts.read(seed.id, ptx)
    assert not any(search.work.glob("artifacts_*"))  # the dump folder went into the archive and is gone
    # what a prompt built on the seed says of its SASS
    digest = search.contexts.context(seed, best=search.best, run_id=search.run_id).parent.digest
    assert digest and all(d["name"].endswith("softmax_row_kernel") for d in digest)
    # the rows of 7 and 300 columns compiled here are not multiples of 16, so Triton cannot vectorize: 32-bit loads
    assert all(set(d["total"]["global_loads"]) == {32} for d in digest)
    search.archive.close()
    shutil.rmtree(search.work, ignore_errors=True)

    copy = tmp_path / "elsewhere" / "copy.db"  # the archive on another machine: the artifacts travel inside it
    copy.parent.mkdir()
    shutil.copy(db, copy)
    shown = evolve("show", seed.id, "--db", copy, "--no-prompt")
    assert shown.returncode == 0 and "compiler artifacts: " in shown.stdout and "--asm" in shown.stdout
    out = evolve("show", seed.id, "--db", copy, "--asm", "ptx", "--kernel", "softmax_row_kernel")
    assert out.returncode == 0 and ".target sm_90a" in out.stdout and "num_warps=" in out.stdout
    ttgir = evolve("show", seed.id, "--db", copy, "--asm", "ttgir")
    assert ttgir.returncode == 0 and "ttg." in ttgir.stdout
    sass = evolve("show", seed.id, "--db", copy, "--asm", "sass")
    assert sass.returncode == 0 and ("code for sm_90a" in sass.stdout or "no cuobjdump" in sass.stdout)
    missing = evolve("show", seed.id, "--db", copy, "--asm", "ptx", "--kernel", "no_such_kernel")
    assert missing.returncode == 1 and "softmax_row_kernel" in missing.stderr


def test_artifacts_are_bounded_and_replaced(tmp_path):
    archive = Archive(tmp_path / "b.db")
    run = archive.start_run("p", "p", {}, "cpu", {})
    cand = archive.add_candidate(run, source="def custom_kernel(x):\n    return x\n", proposer="seed")
    folder = tmp_path / "dump"
    folder.mkdir()
    (folder / "00_k.ptx").write_text("ptx " * 100)
    (folder / "00_k.cubin").write_bytes(b"\0" * 5000)
    (folder / "link.ptx").symlink_to(folder / "00_k.ptx")
    archive.artifacts.FILE_LIMIT = 1000  # the cubin is over it
    assert archive.artifacts.store(cand.id, folder) == 1
    assert [a["name"] for a in archive.artifacts.listing(cand.id)] == ["00_k.ptx"]  # no symlink, nothing over the limit
    assert archive.artifacts.read(cand.id, "00_k.ptx") == ("ptx " * 100).encode()
    (folder / "00_k.ptx").write_text("new")
    archive.artifacts.store(cand.id, folder)
    assert archive.artifacts.read(cand.id, "00_k.ptx") == b"new"
    archive.close()
