"""The SASS digest the prompt carries: a kernel with known spills and unvectorized loads reports both (compiled for
sm_90a here, without a GPU, through the harness), the hot loop is found, and the template bounds what it shows."""
from pathlib import Path

from evolve.digest import digest_kernel, hot_loop, parse_sass
from evolve.harness import EvalOptions, evaluate
from evolve.proposer import LLMProposer, ModelSpec, ProblemView, ProgramView, PromptContext, default_prompts

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "mini_softmax"

LOOP = """
        Function : k
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/                   S2R R0, SR_CTAID.X ;
        /*0020*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0030*/              @!P0 BRA 0x80 ;
        /*0040*/                   LDG.E.128 R8, desc[UR4][R2.64] ;
        /*0050*/                   LDG.E R12, desc[UR4][R6.64] ;
        /*0060*/                   SHFL.BFLY PT, R9, R8, 0x10, 0x1f ;
        /*0070*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0080*/                   ISETP.GE.AND P0, PT, R0, 0x10, PT ;
        /*0090*/               @P0 BRA 0x40 ;
        /*00a0*/                   STG.E.128 desc[UR4][R2.64], R4 ;
        /*00b0*/                   STL [R1], R4 ;
        /*00c0*/                   EXIT ;
"""


def test_the_digest_of_a_kernel_that_spills_and_loads_scalars_reports_both(tmp_path):
    dump = tmp_path / "dump"
    verdict = evaluate(ROOT / "tests" / "data" / "digest" / "spill_gather.py", MINI,
                       EvalOptions(device="cpu", dump_dir=str(dump)))
    assert verdict.rung("compile").ok  # (it is wrong, too, but compiles: the digest needs only the compiler's output)
    sass = sorted(dump.glob("*.sass"))
    assert sass
    d = digest_kernel(sass[0].stem, sass[0].read_text())
    assert d.total.local_loads > 0 and d.total.local_stores > 0  # the spills, as the SASS shows them
    assert set(d.total.global_loads) == {32} and set(d.total.global_stores) == {32}  # no 128-bit vector access
    prompt = render(ProgramView(source="# the program", digest=(d.as_dict(),)))
    assert f"local memory {d.total.local_loads} loads / {d.total.local_stores} stores" in prompt
    assert f"global loads {d.total.global_loads[32]} x 32-bit" in prompt


def test_the_hot_loop_and_the_counts_come_from_the_sass():
    instructions = parse_sass(LOOP)
    assert len(instructions) == 13 and instructions[2] == (0x20, "LDG.E.128 R4, desc[UR4][R2.64]")
    assert hot_loop(instructions) == (0x40, 0x90)  # the backward branch; the forward one is no loop
    d = digest_kernel("00_k", LOOP, "sm_90a num_warps=4", regs=32, spills=0)
    assert d.total.global_loads == {128: 2, 32: 1} and d.total.global_stores == {128: 1}
    assert d.total.local_stores == 1 and d.total.barriers == 1 and d.total.shuffles == 1
    assert d.loop.global_loads == {128: 1, 32: 1} and d.loop.barriers == 1 and len(d.loop_lines) == 6


def test_the_template_bounds_the_digest():
    body = "".join(f"        /*{16 * i:04x}*/                   NOP ;\n" for i in range(1, 101))
    long = f"        /*0000*/ LDG.E.128 R4, desc[UR4][R2.64] ;\n{body}        /*{16 * 101:04x}*/ @P0 BRA 0x10 ;\n"
    d = digest_kernel("00_k", long, "sm_90a")
    assert len(d.loop_lines) == 101
    many = tuple(dict(d.as_dict(), name=f"{i:02d}_k") for i in range(5))
    prompt = render(ProgramView(source="# the program", digest=many))
    assert "the 3 most worth a look of 5" in prompt
    assert prompt.count("- 0") == 3  # three specializations shown
    assert "more lines" in prompt and prompt.count("NOP") <= 3 * 40


def render(parent: ProgramView) -> str:
    proposer = LLMProposer([ModelSpec("openai/x", 1.0)], default_prompts(), api_base="http://127.0.0.1:9")
    context = PromptContext(problem=ProblemView(name="p", description="d", notes="", contract=""), device="H200",
                            knobs_doc="", parent=parent)
    return proposer.render("full_rewrite", context)[1]["content"]


def test_each_specialization_gets_its_own_registers(tmp_path):
    """Two specializations of one kernel: the compile rung's figures are matched by their files, not by name."""
    from evolve.archive import Archive
    from evolve.digest import digest_candidate

    dump = tmp_path / "dump"
    dump.mkdir()
    for stem in ("00_k", "01_k"):
        (dump / f"{stem}.sass").write_text(LOOP)
    (dump / "index.txt").write_text("00_k sm_90a num_warps=4\n01_k sm_90a num_warps=16\n")
    archive = Archive(tmp_path / "d.db")
    run = archive.start_run("p", "p", {}, "NVIDIA H200", {})
    cand = archive.add_candidate(run, source="x = 1\n", proposer="seed")
    archive.artifacts.store(cand.id, dump)
    kernels = [{"name": "k", "regs": 12, "spills": 0, "files": ["00_k.ptx", "00_k.sass"]},
               {"name": "k", "regs": 115, "spills": 3, "files": ["01_k.ptx", "01_k.sass"]}]
    got = {d.name: (d.regs, d.spills, d.about) for d in digest_candidate(archive, cand.id, kernels)}
    assert got == {"00_k": (12, 0, "sm_90a num_warps=4"), "01_k": (115, 3, "sm_90a num_warps=16")}
    older = {d.name: d.regs for d in digest_candidate(archive, cand.id, [{"name": "k", "regs": 40, "spills": 0}])}
    assert older == {"00_k": 40, "01_k": 40}  # a verdict that names no files: the kernel's figures
    archive.close()


def test_show_gives_the_digest_against_the_parent(tmp_path):
    """The child's loads went from 128-bit vectors to scalars and its loop grew: evolve show says so."""
    from evolve.archive import Archive
    from evolve.render import digest_against
    from test_run import evolve
    from verdicts import ladder

    scalar = LOOP.replace("LDG.E.128 R8", "LDG.E R8").replace("LDG.E.128 R4", "LDG.E R4")
    before, after = [digest_kernel("00_k", LOOP)], [digest_kernel("00_k", scalar), digest_kernel("01_q", LOOP)]
    assert digest_against(before, after) == ["  k: 128-bit loads 2 -> 0, 32-bit loads 1 -> 3", "  q: new"]
    assert digest_against(before, before) == []

    archive = Archive(tmp_path / "s.db")
    run = archive.start_run("p", "p", {}, "NVIDIA H200", {})
    ids = []
    for n, sass in enumerate((LOOP, scalar)):
        dump = tmp_path / f"dump{n}"
        dump.mkdir()
        (dump / "00_k.sass").write_text(sass)
        cand = archive.add_candidate(run, source=f"x = {n}\n", proposer="seed" if n == 0 else "llm",
                                     parent_ids=ids[:1])
        archive.artifacts.store(cand.id, dump)
        archive.record_verdict(cand.id, ladder(fitness=0.5 - 0.1 * n), 0.5 - 0.1 * n)
        ids.append(cand.id)
    archive.close()
    shown = evolve("show", str(ids[1]), "--db", tmp_path / "s.db", "--no-prompt")
    assert shown.returncode == 0, shown.stderr
    assert "SASS digest against the parent (each kernel's specializations summed):" in shown.stdout
    assert "  k: 128-bit loads 2 -> 0, 32-bit loads 1 -> 3" in shown.stdout
