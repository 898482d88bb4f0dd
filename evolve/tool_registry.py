"""Every tool evolve offers a model or a coding agent, written once: its name, what it does and its parameters, each
with a description. The MCP server (mcp_server.py), an agent session (agent_tools.py) and a proposal's context tools
(knowledge.py) all take their schemas from here, so one tool reads the same wherever it is called.

A session offers a tool with the parameters it does not fix itself (SESSION_FIXED): its problem, language, device and
archive are the run's, and it has no files of its own. Every answer that reports on a candidate starts with a
one-line summary, then its JSON (tool_answers.py)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Parameter:
    type: str  # a JSON schema type: string, integer, array
    description: str
    enum: tuple[str, ...] = ()


_CASE_LABEL = "e.g. 'fp32 4096x4096'"
PARAMETERS = {
    "problem": Parameter("string", "a problem: its folder's name under the server's problem roots (list_problems "
                                   "names them), or a path inside one of those roots"),
    "candidate": Parameter("string", "a path to the candidate's .py file (give this or source, not both)"),
    "source": Parameter("string", "the complete program as text: the whole .py file, custom_kernel included"),
    "language": Parameter("string", "the candidate's language: triton, cutedsl or tilelang (default: the problem's "
                                    "first)"),
    "device": Parameter("string", "auto (the GPU where there is one), cuda, or cpu (compiled for sm_90a and run under "
                                  "the Triton interpreter; nothing is timed against the roofline)",
                        ("auto", "cuda", "cpu")),
    "db": Parameter("string", "the archive (an SQLite file), relative to the server's working folder "
                              "(default runs/evolve.db)"),
    "candidate_id": Parameter("integer", "an archived candidate's number, as show and the run's progress name it"),
    "kind": Parameter("string", "what the compiler produced: sass, ptx, ttgir, ttir or llir",
                      ("sass", "ptx", "ttgir", "ttir", "llir")),
    "kernel": Parameter("string", "part of a kernel's name, to pick one specialization (default: the first)"),
    "case": Parameter("string", f"a benchmark case by its label, {_CASE_LABEL} (default: the one nearest the "
                                "overall figure)"),
    "cases": Parameter("array", f"one or two benchmark cases by their labels, {_CASE_LABEL} (default: the "
                                "problem's first; a wrong label is answered with the list)"),
    "query": Parameter("string", "words to look for, e.g. 'online softmax running max rescale'"),
    "limit": Parameter("integer", "how many passages to return (1 to 10, default 4)"),
    "path": Parameter("string", "a file's path exactly as search_context printed it"),
    "start_line": Parameter("integer", "the first line to read (1-based)"),
    "end_line": Parameter("integer", "the last line to read (at most 200 lines a call)"),
    "what": Parameter("string", "'digest' (its SASS digest per kernel specialization), 'sass', 'ptx' or 'ttgir' "
                                "(one specialization, bounded), or 'profile' (its Nsight Compute summary, when it "
                                "was profiled)", ("digest", "sass", "ptx", "ttgir", "profile")),
    "text": Parameter("string", "the hint, in words the run's next prompts will carry"),
    "run": Parameter("integer", "the run's number (default: the one going on now, else the newest)"),
}
# what an agent session fixes itself: the run's problem, language, device and archive; a session has no files, and
# reads archived programs through read_parent
SESSION_FIXED = frozenset({"problem", "candidate", "candidate_id", "language", "device", "db", "run"})


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: tuple[str, ...]
    required: tuple[str, ...] = ()

    def schema(self, leave_out=frozenset()) -> dict:
        """The JSON schema of its arguments, without the parameters left out."""
        properties = {}
        for name in self.parameters:
            if name in leave_out:
                continue
            p = PARAMETERS[name]
            properties[name] = {"type": p.type, "description": p.description,
                                **({"enum": list(p.enum)} if p.enum else {}),
                                **({"items": {"type": "string"}, "maxItems": 2} if p.type == "array" else {})}
        required = [name for name in self.required if name in properties]
        if "source" in properties and "candidate" not in properties and "source" not in required:
            required.append("source")  # with no file to name, the text is the program's only way in
        return {"type": "object", "properties": properties, "required": required}

    def function(self, leave_out=frozenset()) -> dict:
        """The tool as litellm's (OpenAI's) function-calling API describes it to a model."""
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": self.schema(leave_out)}}


_SOURCE = ("problem", "candidate", "source", "language")
TOOLS = {tool.name: tool for tool in (
    Tool("evaluate", "The whole rung ladder (load, compile, run, correctness, benchmark, roofline) for a candidate "
                     "against a problem: a one-line summary, then the verdict's JSON as `evolve eval --json` gives "
                     "it, with identical kernel specializations listed once each and counted.",
         (*_SOURCE, "device"), ("problem",)),
    Tool("compile", "Load and compile a version: whether it passes the static check and compiles, with each "
                    "kernel's registers, spills and shared memory, or the error that stopped it. Nothing is run or "
                    "timed (a language that compiles without a GPU is compiled for sm_90a off the card).",
         _SOURCE, ("problem",)),
    Tool("check", "Run a version on the problem's test shapes (and shapes drawn from those it accepts) and check its "
                  "outputs against the reference, through the sealed harness: each rung's result up to correctness. "
                  "Not timed. Advice, never a verdict.",
         _SOURCE, ("problem",)),
    Tool("time", "A quick timing of one or two benchmark cases through the sealed harness, queued for the card as "
                 "every evaluation is: each case's time and fraction of its roofline. Advice, never a verdict: only "
                 "a submitted or evaluated program timed on every case ranks.",
         (*_SOURCE, "cases"), ("problem",)),
    Tool("asm", "What the compiler produced for a version (sass, ptx, ttgir, ttir or llir), one kernel "
                "specialization, bounded: of an archived candidate (candidate_id), or of a program compiled now.",
         ("candidate_id", *_SOURCE, "kind", "kernel", "db"), ()),
    Tool("profile", "Nsight Compute on one benchmark case, in a jailed child holding the card: per kernel time, "
                    "DRAM and SM throughput, occupancy, top stalls. Needs a GPU with ncu.",
         ("candidate_id", "problem", "candidate", "source", "case", "db"), ()),
    Tool("trace", "Time the sections a Triton kernel marks (`# section: NAME` comment lines in its @triton.jit "
                  "function) on one benchmark case, on the GPU, in a jailed child: cycles and nanoseconds per "
                  "section per warp.",
         ("candidate_id", "problem", "candidate", "source", "case", "db"), ()),
    Tool("search_context", "Full-text search of the reference notes and examples (the language on Hopper, PTX and "
                           "SASS, the problem's notes, the user's folders) and the language's installed sources: the "
                           "best-matching passages with their path and line range; read more with read_context.",
         ("query", "language", "limit"), ("query",)),
    Tool("read_context", "Lines of one file search_context found (at most 200 lines a call).",
         ("path", "start_line", "end_line", "language"), ("path",)),
    Tool("read_parent", "What the compiler and the profiler made of the current program (the parent): its SASS "
                        "digest, SASS, PTX or TTGIR, or its profile.",
         ("what", "kernel"), ("what",)),
    Tool("submit", "Submit the complete program to be evaluated as a candidate on every rung; the session ends.",
         ("source",), ("source",)),
    Tool("list_problems", "The problems under the server's problem roots: name, path, languages and the "
                          "description's first sentence.", ()),
    Tool("read_problem", "A problem's problem.toml, reference.py and notes.md, as text.", ("problem",), ("problem",)),
    Tool("show", "One archived candidate: source, lineage, rung ladder and per-case figures.",
         ("candidate_id", "db"), ("candidate_id",)),
    Tool("best", "The best correct kernel of a problem in an archive, as archived (not re-verified).",
         ("problem", "db"), ("problem",)),
    Tool("leaderboard", "Models per problem and device in an archive, as `evolve leaderboard --json` gives it.",
         ("db",)),
    Tool("hint", "Tell a run something while it goes on: every prompt it writes from now on carries the hint.",
         ("text", "db", "run"), ("text",)),
    Tool("pause", "Pause a run's proposals (what is in flight finishes); resume lets it go on.", ("db", "run")),
    Tool("resume", "Let a run paused by pause go on proposing.", ("db", "run")),
)}

MCP = ("evaluate", "compile", "check", "time", "asm", "profile", "trace", "search_context", "read_context",
       "list_problems", "read_problem", "show", "best", "leaderboard", "hint", "pause", "resume")
SESSION = ("compile", "check", "time", "asm", "profile", "search_context", "read_context", "read_parent", "submit")
PROPOSAL = ("search_context", "read_context", "read_parent")  # a one-shot proposal's context tools


def functions(names, leave_out=frozenset()) -> list[dict]:
    """The named tools as a model is offered them."""
    return [TOOLS[name].function(leave_out) for name in names]
