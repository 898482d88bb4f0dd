"""Compiling ahead, off the card: the compile-only runner compiles a candidate's kernels from input shapes alone (meta
tensors, no data), and the measurer hands its kernel cache (Triton's, TileLang's) to the GPU runner only as plain files
it does not have."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evolve.harness.measurer import ahead
from evolve.harness.shared import compiled
from evolve.harness.measurer.inputs import InputMaker
from evolve.harness.shared.protocol import RUNNER
from evolve.harness.shared.seeds import COMPILE_SEED
from evolve.harness.shared.wire import Link

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "problems" / "softmax" / "seeds"


def _runner(work: Path, language: str = "triton"):
    """A compile-only runner as a crew starts it (its own folder, jailed where Landlock exists), and its link."""
    from evolve import lang

    to_r, to_w = os.pipe()
    from_r, from_w = os.pipe()
    (work / "tmp").mkdir(parents=True)
    env = {**os.environ, **lang.get(language).runner_env("compile", work), "TMPDIR": str(work / "tmp"),
           "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": str(ROOT)}
    env.pop("TRITON_INTERPRET", None)
    proc = subprocess.Popen([sys.executable, "-m", "evolve.harness.runner.runner", str(to_r), str(from_w), "compile",
                             str(work), str(work / "tmp"), language],
                            pass_fds=(to_r, from_w), env=env, cwd=work, start_new_session=True)
    os.close(to_r)
    os.close(from_w)
    return proc, Link(from_r, to_w, RUNNER)


def _recv(link, timeout=300):
    assert link.ready(timeout)
    return link.recv()


def test_the_compile_only_runner_compiles_from_shapes_alone(tmp_path):
    seed = next(SEED.glob("*.py"))
    broken = tmp_path / "reads_data.py"
    broken.write_text(seed.read_text() + textwrap.dedent("""

        _custom_kernel = custom_kernel


        def custom_kernel(x):
            if x.shape[0] == 3:
                float(x.sum())  # host code that needs the data: its set is skipped, the others compile
            return _custom_kernel(x)
        """))
    proc, link = _runner(tmp_path / "compile")
    try:
        assert _recv(link)["kind"] == "ready"
        link.send({"kind": "load", "candidate": str(broken), "beside": False})
        assert _recv(link)["kind"] == "loaded"
        sets = [{"inputs": [{"shape": [m, n], "stride": [n, 1], "dtype": dtype}], "tree": None}
                for m, n, dtype in ((64, 1024, "float32"), (3, 1024, "float32"), (64, 4096, "bfloat16"))]
        link.send({"kind": "precompile", "sets": sets, "launchers": True})
        answer = _recv(link)
        assert answer["kind"] == "precompiled", answer
        assert answer["sets"] == 2 and answer["kernels"] >= 2 and answer["error"]
        assert 0 <= answer["launchers"] <= answer["kernels"]  # none where Triton has no launcher per signature
        cubins = list((tmp_path / "compile" / "triton").glob("*/*.cubin"))
        assert len(cubins) >= 2  # real sm_90 code, for the GPU runner to find under the same keys
    finally:
        proc.kill()
        proc.wait()


def test_the_cache_is_handed_over_as_plain_files_it_lacks(tmp_path, monkeypatch):
    source, target = tmp_path / "compile" / "triton", tmp_path / "gpu" / "triton"
    (source / "AAA").mkdir(parents=True)
    (source / "AAA" / "kernel.cubin").write_bytes(b"cubin")
    (source / "AAA" / "kernel.json").write_text("{}")
    (source / "AAA" / "deeper").mkdir()
    (source / "AAA" / "deeper" / "x.cubin").write_bytes(b"x")  # a third level: not Triton's layout
    (source / "AAA" / "secret.cubin").symlink_to(tmp_path / "outside")
    (tmp_path / "outside").write_text("the measurer's own file")
    (source / "BBB").symlink_to(tmp_path)  # a linked folder
    (source / "CCC").mkdir()
    (source / "CCC" / "big.cubin").write_bytes(b"0" * 100)
    os.mkfifo(source / "CCC" / "pipe.cubin")
    (source / "DDD").mkdir()
    (source / "DDD" / "cuda_utils.so").write_bytes(b"the runner's")
    (target / "DDD").mkdir(parents=True)
    (target / "DDD" / "cuda_utils.so").write_bytes(b"the measurer's")  # there already: kept
    monkeypatch.setattr(compiled, "FILE_BYTES", 64)
    import json

    listed = {"kernel.cubin": str(source / "AAA" / "kernel.cubin"), "kernel.json": str(source / "AAA" / "kernel.json")}
    (source / "AAA" / "__grp__kernel.json").write_text(json.dumps({"child_paths": listed}))
    (source / "CCC" / "__grp__big.json").write_text(json.dumps({"child_paths": {"big.cubin": "x/big.cubin"}}))
    (source / "AAA" / "__grp__odd.json").write_text("not json")
    assert compiled.copy_cache(str(source), str(target)) == 3
    got = sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())
    assert got == ["AAA/__grp__kernel.json", "AAA/kernel.cubin", "AAA/kernel.json", "DDD/cuda_utils.so"]
    # the group lists the copies (Triton reads a kernel's files by the paths its group file gives)
    moved = json.loads((target / "AAA" / "__grp__kernel.json").read_text())["child_paths"]
    assert moved == {name: str(target / "AAA" / name) for name in listed}
    assert (target / "DDD" / "cuda_utils.so").read_bytes() == b"the measurer's"
    assert compiled.copy_cache(str(tmp_path / "missing"), str(target)) == 0
    many = tmp_path / "many"
    (many / "EEE").mkdir(parents=True)
    for i in range(5):
        (many / "EEE" / f"f{i}.bin").write_bytes(b"0" * 40)
    monkeypatch.setattr(compiled, "COPY_BYTES", 100)
    assert compiled.copy_cache(str(many), str(tmp_path / "into")) == 2  # the rest would pass the byte budget
    monkeypatch.setattr(compiled, "COPY_BYTES", 1000)
    monkeypatch.setattr(compiled, "COPY_FILES", 3)
    assert compiled.copy_cache(str(many), str(tmp_path / "into2")) == 3


def test_no_copy_reads_or_writes_through_a_link_on_either_side(tmp_path):
    """The GPU runner can write in its own cache while the measurer copies into it: a link it puts there (a folder, a
    file name, the cache's root) must not carry the measurer's writes elsewhere, nor a linked source root its reads."""
    outside = tmp_path / "site-packages"
    outside.mkdir()
    source, target = tmp_path / "compile" / "triton", tmp_path / "gpu" / "triton"
    for entry in ("X", "Y", "Z"):
        (source / entry).mkdir(parents=True)
        (source / entry / "zz.pth").write_text("import os  # would run at every start-up")
    target.mkdir(parents=True)
    (target / "X").symlink_to(outside)  # a linked folder
    (target / "Y").mkdir()
    (target / "Y" / "zz.pth").symlink_to(outside / "planted.pth")  # a linked file name
    assert compiled.copy_cache(str(source), str(target)) == 1  # Z only
    assert list(outside.iterdir()) == []
    assert (target / "Z" / "zz.pth").is_file() and (target / "Y" / "zz.pth").is_symlink()
    linked_root = tmp_path / "gpu2" / "triton"
    linked_root.parent.mkdir()
    linked_root.symlink_to(outside)
    assert compiled.copy_cache(str(source), str(linked_root)) == 0 and list(outside.iterdir()) == []
    (outside / "A").mkdir()
    (outside / "A" / "secret.txt").write_text("not the runner's")
    linked_source = tmp_path / "compile2" / "triton"
    linked_source.parent.mkdir()
    linked_source.symlink_to(outside)
    assert compiled.copy_cache(str(linked_source), str(tmp_path / "into")) == 0
    assert not (tmp_path / "into" / "A").exists()


def test_a_copy_cut_short_leaves_no_file_under_its_name(tmp_path):
    folder = tmp_path / "cache"
    folder.mkdir()
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        def fails(out):
            out.write(b"half a cubin")
            raise OSError(28, "No space left on device")

        with pytest.raises(OSError):
            compiled._write_new("kernel.cubin", fd, fails)
        assert list(folder.iterdir()) == []
        compiled._write_new("kernel.cubin", fd, lambda out: out.write(b"whole"))
        assert [p.name for p in folder.iterdir()] == ["kernel.cubin"]
        assert (folder / "kernel.cubin").read_bytes() == b"whole"
    finally:
        os.close(fd)


def test_shapes_ahead_are_described_without_memory():
    """The compile rung's and each benchmark case's first inputs, from the problem's own generator under
    FakeTensorMode: the largest softmax shape (512 MB) in an instant, strides and dtypes as the real call's."""
    import torch

    from evolve.harness.shared.formats import load_problem, reference_for, shapes_ahead

    problem = load_problem(str(ROOT / "problems" / "softmax"))
    parts = shapes_ahead(problem, 7, torch.device("cpu"))
    assert [len(parts["tests"]), len(parts["benchmarks"])] == [len(problem.tests), len(problem.benchmarks)]
    sets = parts["tests"] + parts["benchmarks"]
    shapes = [s["inputs"][0]["shape"] for s in sets]
    assert [1024, 131072] in shapes and all(s["inputs"][0]["stride"][-1] == 1 for s in sets)
    maker = InputMaker(problem, reference_for(problem), 7, torch.device("cpu"))
    real = maker.make(problem.tests[0], COMPILE_SEED).leaves[0]
    assert sets[0]["inputs"][0] == {"shape": list(real.shape), "stride": list(real.stride()),
                                    "dtype": str(real.dtype).removeprefix("torch.")}


def test_shapes_ahead_leave_the_measurers_reference_real():
    """A KernelBench reference keeps the first model its generator made: described first, under FakeTensorMode, its
    weights were fake tensors for every real call after (the float64 reference fell back, another device failed)."""
    import torch

    from evolve.harness.shared.formats import load_problem, reference_for, shapes_ahead

    problem = load_problem(str(ROOT / "tests" / "data" / "kernelbench" / "scale_shift_relu.py"))
    reference = reference_for(problem)
    maker = InputMaker(problem, reference, 7, torch.device("cpu"))
    parts = shapes_ahead(problem, 7, torch.device("cpu"))
    assert parts["tests"] and parts["tests"][0]["inputs"][0]["shape"]
    case = problem.tests[0]
    inputs = maker.make(case, 1)
    assert not any(type(t).__name__ == "FakeTensor" for t in inputs.leaves if isinstance(t, torch.Tensor))
    assert reference.skeleton is not None
    assert not any(type(p).__name__ == "FakeTensor" for p in reference.skeleton.parameters())
    refs = reference.reference(inputs, on_cpu=True)
    assert refs[0].dtype == torch.float64  # the float64 reference, not the float32 fallback
    reference._call(inputs.leaves, device=torch.device("meta"))  # another device: the model moves


def test_the_measurer_takes_each_part_then_stops_the_compiler(tmp_path, monkeypatch):
    """The GPU mode's orchestration, driven here with a real compile-only runner: the candidate and both parts' shapes
    sent at the start, the lease told the runner is off the card (its jail seen), each part's cache copied into the GPU
    runner's folder when taken, and the runner killed after the last."""
    import signal

    import torch

    from evolve.harness.measurer.exchange import Caller
    from evolve.harness.shared.formats import load_problem
    from evolve.harness.measurer.timing_lease import TimingLease

    monkeypatch.chdir(tmp_path)
    proc, link = _runner(tmp_path / "compile")
    sent = []

    class Channel:
        def send(self, message):
            sent.append(message)

    problem = load_problem(str(ROOT / "tests" / "adversarial" / "problem"))
    device = torch.device("cpu")
    job = {"candidate": str(next(SEED.glob("*.py")))}
    caller = Caller("compile", link, None, device)
    lease = TimingLease(Channel(), -1, device, {"compile": proc.pid})
    compiling = ahead.CompileAhead(job, problem, 7, device, caller, Channel(), lease)
    try:
        jail = caller.recv("ready")["jail"]
        compiling.start(jail)
        landlock = jail.startswith("landlock")
        assert sent == ([{"kind": "lease", "act": "offcard"}] if landlock else [])
        compiling.take("tests")
        tests = compiling.records["tests"]
        assert tests["sets"] == len(problem.tests) and tests["kernels"] >= 1 and tests["files"] >= 2
        assert proc.poll() is None  # still compiling the benchmark's shapes
        assert caller.answered(120)  # its answer here, but past the deadline (time stopped for other leases runs
        monkeypatch.setattr(ahead, "PRECOMPILE_WAIT_S", 0.0)  # on its clock): still taken
        compiling.take("benchmarks")
        assert compiling.records["benchmarks"]["sets"] == len(problem.benchmarks)
        assert list((tmp_path / "gpu" / "triton").glob("*/*.cubin"))
        assert proc.wait(timeout=10) == -signal.SIGKILL and compiling.pending == []
        compiling.take("benchmarks")  # taken already: nothing happens
    finally:
        proc.kill()
        proc.wait()


def test_tilelangs_kernels_reach_the_gpu_runners_folder_four_folders_deep(tmp_path, monkeypatch):
    """TileLang's cache keeps a kernel at <version>/<platform>/kernels/<key>/: what the compile-only runner built for
    the tests' shapes is in the GPU runner's own TileLang folder when the part is taken, every kernel whole."""
    import shutil

    import torch

    from evolve.harness.measurer.exchange import Caller
    from evolve.harness.shared.formats import load_problem
    from evolve.harness.measurer.timing_lease import TimingLease

    pytest.importorskip("tilelang")
    folder = tmp_path / "mini"
    shutil.copytree(ROOT / "tests" / "data" / "mini_softmax", folder)
    (folder / "problem.toml").write_text('languages = ["triton", "tilelang"]\n' + (folder / "problem.toml").read_text())
    monkeypatch.chdir(tmp_path)
    proc, link = _runner(tmp_path / "compile", "tilelang")

    class Channel:
        def send(self, message):
            pass

    problem = load_problem(str(folder))
    device = torch.device("cpu")
    job = {"candidate": str(ROOT / "problems" / "softmax" / "seeds" / "tilelang" / "softmax_rows.py"),
           "language": "tilelang"}
    caller = Caller("compile", link, None, device)
    compiling = ahead.CompileAhead(job, problem, 7, device, caller, Channel(),
                                   TimingLease(Channel(), -1, device, {"compile": proc.pid}))
    monkeypatch.setattr(ahead, "PRECOMPILE_WAIT_S", 300.0)
    try:
        compiling.start(caller.recv("ready")["jail"])
        compiling.take("tests")
        tests = compiling.records["tests"]
        assert tests["sets"] == len(problem.tests) and tests["kernels"] >= 1, tests
        handed = list((tmp_path / "gpu" / "tilelang").glob("*/*/kernels/*/executable.so"))
        assert len(handed) >= tests["kernels"], handed  # the benchmark's shapes may be there too, still compiling
        for so in handed:  # each kernel whole: its manifest and the files it lists
            kept = {p.name for p in so.parent.iterdir()}
            assert {"manifest.json", "params.json", "device_kernel.cu", "host_kernel.cu"} <= kept, kept
        assert list((tmp_path / "gpu" / "tilelang").glob("*/cuda-binaries/*/kernel.cubin"))
    finally:
        proc.kill()
        proc.wait()


def test_every_evaluation_of_a_source_starts_from_the_same_state(tmp_path):
    """A runner's kernel cache was once kept and handed to the next evaluation of the same bytes: a file the candidate
    wrote there through Triton's public cache API told a re-timing from a first evaluation (on an H200 such a kernel
    read 0.652 the first time and 0.701 from the same cache, and passed its launch audit). Nothing a runner writes
    outlives its evaluation: the second evaluation finds no file of the first, and compiles every kernel again."""
    from dataclasses import replace

    from evolve.harness import EvalOptions, evaluate

    problem = ROOT / "tests" / "adversarial" / "problem"
    honest = (ROOT / "problems" / "softmax" / "solutions" / "correct" / "single_block.py").read_text()
    path = tmp_path / "remembers.py"
    path.write_text(honest + textwrap.dedent('''
        import hashlib
        from triton.runtime.cache import get_cache_manager

        _MARK = get_cache_manager(hashlib.sha256(b"evaluated before").hexdigest())
        SEEN = _MARK.get_file("seen") is not None
        _MARK.put(b"yes", "seen")
        _honest = custom_kernel

        def custom_kernel(x):
            return torch.empty_like(x) if SEEN else _honest(x)
    '''))
    options = EvalOptions(device="cpu", cache_dir=str(tmp_path / "cache"), static_check=False)
    first, second = evaluate(path, problem, options), evaluate(path, problem, replace(options))
    assert first.ok, first.failure
    assert second.ok, second.failure  # it found nothing of its first evaluation
    assert second.rung("compile").metrics["cache_hits"] == 0 and second.rung("compile").metrics["fresh"] > 0
