"""The LLM seam: render a prompt, ask a model (any provider, through litellm), turn the reply into candidate source.

`LLMProposer.propose` is the only place that talks to a model. It never raises for anything the network or the model
does: a failure comes back as a `Proposal` with `source=None` and a one-line `error`. litellm is imported lazily so
that `import evolve.proposer` stays cheap.
"""
from __future__ import annotations

import ast
import copy
import functools
import importlib.util
import json
import math
import os
import random
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .problems import strip_test_header
from .redact import redact

TEMPLATES = ("full_rewrite", "diff_edit", "repair", "agent")
_MAX_BACKOFF_S = 60.0


@dataclass(frozen=True)
class ModelSpec:
    name: str  # any litellm model string, e.g. "anthropic/claude-sonnet-4-5", "openai/my-model"
    weight: float = 1.0
    agent: bool = False  # its proposals are tool sessions (strategies/agent.py), not one answer each

    @property
    def label(self) -> str:
        """How a leaderboard and a bench name it: an agent's name says it is one."""
        return f"{self.name} (agent)" if self.agent else self.name


def parse_models(values: list[str], agent: bool = False) -> list[ModelSpec]:
    """Parse "name" or "name=weight" strings (weights are relative, >= 0, at least one positive); `agent`: the
    models' proposals are tool sessions."""
    specs = []
    for value in values:
        name, sep, weight_text = value.strip().rpartition("=") if "=" in value else (value.strip(), "", "")
        name = name.strip()
        if not name:
            raise ValueError(f"model {value!r} has no name; write NAME or NAME=WEIGHT, e.g. openai/my-model=0.5")
        weight = 1.0
        if sep:
            try:
                weight = float(weight_text)
            except ValueError:
                raise ValueError(f"model {value!r}: weight {weight_text.strip()!r} is not a number; "
                                 f"write e.g. {name}=0.5") from None
            if not math.isfinite(weight) or weight < 0:
                raise ValueError(f"model {value!r}: weight must be a finite number >= 0, got {weight_text.strip()}")
        specs.append(ModelSpec(name, weight, agent))
    if specs and not any(s.weight > 0 for s in specs):
        raise ValueError("every model has weight 0; give at least one a positive weight")
    return specs


@dataclass(frozen=True)
class ProblemView:
    """What a prompt says of the problem."""
    name: str
    description: str
    notes: str
    contract: str  # generated from the candidate language's rules (evolve/lang)
    accepts: str = ""  # the shapes it accepts, in words ("M from 1 to 8192, D one of 64, 128"); "" where fixed


@dataclass(frozen=True)
class ProgramView:
    """What a prompt says of one archived program: its source and how it did."""
    source: str
    fitness: float | None = None
    score: float | None = None
    ladder: tuple[str, ...] = ()  # the rung lines, as `evolve eval` prints them
    failed_rung: str | None = None
    reason: str | None = None
    kernels: tuple[dict, ...] = ()  # per compiled specialization: name, regs, spills, smem, num_warps, ...
    shapes: tuple[dict, ...] = ()  # per benchmark shape: case, ms, roofline_fraction, speedup_vs_torch, ...
    correctness: str | None = None  # the correctness rung's summary
    digest: tuple[dict, ...] = ()  # per kernel specialization, what its SASS shows (digest.KernelDigest.as_dict)
    profile: str = ""  # its Nsight Compute summary (profiling.render) and traced sections (tracing.render)


@dataclass(frozen=True)
class PromptContext:
    """Everything the templates (prompts/*.j2) may read; `template` is added when one is rendered."""
    problem: ProblemView
    device: str
    knobs_doc: str
    parent: ProgramView | None = None
    inspirations: tuple[ProgramView, ...] = ()
    error: str | None = None  # the compiler's or loader's message, for a repair
    hints: tuple = ()  # the person's hints to this run ({"id", "text", "created"}), oldest first
    references: tuple = ()  # passages of the context folders for a model without tools ({"path", "start", "end",
    # "title", "text"}, best first)
    lessons: tuple = ()  # what earlier runs learned (evolve/lessons.py, prompts/_lessons.j2), the problem's own first

    def as_dict(self) -> dict:
        import dataclasses

        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Proposal:
    source: str | None  # the full candidate source, or None when the reply could not be used
    error: str | None  # one line: why not
    template: str  # "full_rewrite" | "diff_edit" | "repair"
    model: str
    prompt: str  # the rendered messages as one text (role headers + content)
    reply: str | None  # raw reply text (None if no reply arrived)
    tokens_in: int
    tokens_out: int
    cost: float  # USD from litellm.completion_cost; 0.0 when litellm has no price for the model
    latency_s: float  # wall time of the whole proposal: every attempt and the waits between them
    attempts: int  # HTTP attempts made (1 = no retry)
    tool_log: tuple = ()  # one dict per tool call: round, name, arguments, result (bounded), its round's tokens, cost


def _litellm():
    # Without this litellm fetches its price map from GitHub at import (and waits on retries when offline).
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" banners on stdout: only the CLI prints
    return litellm


# Where the most used providers take their key from, as litellm.validate_environment reads it: provider prefix ->
# the variables any one of which will do (the first is the one to set). Read without importing litellm, which takes
# seconds (10 or more on a small machine): a missing key is said at once. Other providers are litellm's to judge.
PROVIDER_KEYS = {
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"),
    "openai": ("OPENAI_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "mistral": ("MISTRAL_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "together_ai": ("TOGETHERAI_API_KEY",),
    "cohere": ("COHERE_API_KEY",),
    "fireworks_ai": ("FIREWORKS_AI_API_KEY", "FIREWORKS_API_KEY", "FIREWORKSAI_API_KEY", "FIREWORKS_AI_TOKEN"),
    "cerebras": ("CEREBRAS_API_KEY",),
}


def _missing_key(name: str, variables) -> str:
    first, others = variables[0], list(variables[1:])
    nor = f" (nor {' or '.join(others)}, which would also do)" if others else ""
    return (f"{name}: {first} is not set{nor}; export {first}=... (your provider key), or serve a model on an "
            f"OpenAI-compatible server and pass --api-base http://HOST:PORT/v1 --model openai/<served-name>")


@functools.lru_cache(maxsize=1)
def _model_providers() -> dict:
    """litellm's bundled model map (a name without a provider prefix, gpt-5 say, -> its provider), read as a file
    without importing litellm; empty where it cannot be read (litellm then judges the name)."""
    spec = importlib.util.find_spec("litellm")
    try:
        folder = spec.submodule_search_locations[0]
        with open(os.path.join(folder, "model_prices_and_context_window_backup.json")) as f:
            return {name: entry.get("litellm_provider") for name, entry in json.load(f).items()
                    if isinstance(entry, dict)}
    except (AttributeError, IndexError, TypeError, OSError, ValueError):
        return {}


def check_keys(models, api_base: str | None) -> tuple[list[str], list]:
    """(problems, the models left for litellm to judge): the key of every model of a provider in PROVIDER_KEYS,
    named provider/model or by a bare name litellm's model map gives that provider, is looked up here, without
    litellm."""
    problems, rest = [], []
    for model in models:
        name = model.name if isinstance(model, ModelSpec) else str(model)
        provider = name.split("/", 1)[0] if "/" in name else _model_providers().get(name)
        if provider not in PROVIDER_KEYS:
            rest.append(model)
        elif not api_base and not any(os.environ.get(v) for v in PROVIDER_KEYS[provider]):
            problems.append(_missing_key(name, PROVIDER_KEYS[provider]))
    return problems, rest


def check_models(models, api_base: str | None) -> list[str]:
    """One human-readable problem per model litellm cannot call as configured (a missing provider key, mostly)."""
    problems, rest = check_keys(models, api_base)
    litellm = _litellm() if rest else None
    for model in rest:
        name = model.name if isinstance(model, ModelSpec) else str(model)
        try:
            litellm.get_llm_provider(model=name, api_base=api_base)
        except Exception:  # noqa: BLE001 - litellm raises BadRequestError for an unknown provider
            problems.append(
                f"{name}: litellm cannot tell which provider serves this model; write it as provider/model, "
                f"e.g. anthropic/claude-sonnet-4-5, or openai/{name} --api-base URL for an OpenAI-compatible server"
            )
            continue
        if api_base:
            continue  # local OpenAI-compatible servers need no key (whether one answers is checked once, below)
        missing = litellm.validate_environment(model=name).get("missing_keys") or []
        if missing:
            problems.append(_missing_key(name, missing) if len(missing) == 1 else
                            f"{name}: {' and '.join(missing)} are not set; export "
                            f"{' '.join(k + '=...' for k in missing)} (your provider's settings), or serve a model on "
                            f"an OpenAI-compatible server and pass --api-base http://HOST:PORT/v1 --model "
                            f"openai/<served-name>")
    if api_base and models:
        problems += _check_endpoint(api_base)
    return problems


def _check_endpoint(api_base: str, timeout_s: float = 5.0) -> list[str]:
    """Whether anything answers HTTP at api_base: any status counts (a 401 or 404 is a server that answers); a refused
    connection, an unknown host or a timeout is a problem to name before the run starts."""
    import urllib.error
    import urllib.parse
    import urllib.request

    parts = urllib.parse.urlparse(api_base)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return [f"--api-base {api_base}: not an http(s) URL; e.g. http://127.0.0.1:8000/v1"]
    try:
        urllib.request.urlopen(api_base.rstrip("/") + "/models", timeout=timeout_s).close()
    except urllib.error.HTTPError:
        pass  # it answered
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return [f"--api-base {api_base}: nothing answers there ({reason}); start the server, or check the host, "
                f"the port and the /v1 suffix"]
    return []


def _is_retryable(exc: BaseException, litellm) -> bool:
    names = ("RateLimitError", "InternalServerError", "ServiceUnavailableError", "APIConnectionError", "Timeout",
             "BadGatewayError")
    transient = tuple(t for t in (getattr(litellm, n, None) for n in names) if isinstance(t, type))
    if isinstance(exc, getattr(litellm, "AuthenticationError", ())) or isinstance(
        exc, getattr(litellm, "PermissionDeniedError", ())
    ):
        return False
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and 400 <= status < 500 and status not in (408, 429):
        return False  # bad request, not found, context window...: the same request fails again
    return isinstance(exc, transient) or (isinstance(status, int) and (status >= 500 or status in (408, 429)))


def _retry_after(exc: BaseException) -> float:
    response = getattr(exc, "response", None)
    try:
        return max(0.0, float(response.headers.get("retry-after")))
    except Exception:  # noqa: BLE001 - absent, a date, or no response at all
        return 0.0


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _describe(exc: BaseException) -> str:
    """One line: "RateLimitError (HTTP 429): <provider message>", without litellm's repeated class-name prefixes."""
    name, message = type(exc).__name__, str(exc)
    for prefix in (f"litellm.{name}: ", f"{name}: "):
        message = message[len(prefix):] if message.startswith(prefix) else message
    status = getattr(exc, "status_code", None)
    return f"{name}{f' (HTTP {status})' if isinstance(status, int) else ''}: {_one_line(message)}"


def default_prompts() -> Path:
    """The prompt templates: `prompts/` of a source checkout (or an editable install), else the copy a wheel installs
    as `evolve/prompts`."""
    installed = Path(__file__).resolve().parent / "prompts"
    return installed if installed.is_dir() else Path(__file__).resolve().parents[1] / "prompts"


def prompt_folders(language, root: Path | None = None) -> list[Path]:
    """Where a run's templates are looked up, first to last: the language's own folder of them (Language.prompt_folder),
    then the shared ones."""
    root = Path(root) if root is not None else default_prompts()
    return [root / language.prompt_folder, root] if language.prompt_folder else [root]


def _shown(context: dict) -> dict:
    """The context with each program's source as a model is to read it: without the test header a problem's solution
    files start with (`# expect: ok`)."""
    def program(view):
        if isinstance(view, dict) and isinstance(view.get("source"), str):
            return {**view, "source": strip_test_header(view["source"])}
        return view

    shown = dict(context)
    if shown.get("parent") is not None:
        shown["parent"] = program(shown["parent"])
    if shown.get("inspirations"):
        shown["inspirations"] = [program(v) for v in shown["inspirations"]]
    return shown


class LLMProposer:
    def __init__(self, models: list[ModelSpec], prompts_dir: Path | list[Path], api_base: str | None = None,
                 timeout_s: float = 180.0, max_retries: int = 4, backoff_s: float = 2.0,
                 concurrency: int = 4, rng: random.Random | None = None, temperature: float = 0.8,
                 tools: str = "auto", tool_rounds: int = 4):
        if not models or not any(m.weight > 0 for m in models):
            raise ValueError("LLMProposer needs at least one model with a positive weight")
        import jinja2

        self.models = list(models)
        # one folder, or several searched in order (prompt_folders: a language's own templates first)
        several = isinstance(prompts_dir, (list, tuple))
        self.prompt_dirs = [Path(p) for p in prompts_dir] if several else [Path(prompts_dir)]
        self.api_base = api_base
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.temperature = temperature
        if tools not in ("auto", "on", "off"):
            raise ValueError(f"tools must be auto, on or off, not {tools!r}")
        self.tools, self.tool_rounds = tools, max(0, int(tool_rounds))
        self.rng = rng or random.Random()
        self._rng_lock = threading.Lock()
        self._jitter = random.Random()  # backoff jitter must not shift the seeded model choice
        self.concurrency = max(1, concurrency)
        self._slots = threading.Semaphore(self.concurrency)
        self._env = jinja2.Environment(
            loader=jinja2.FileSystemLoader([str(p) for p in self.prompt_dirs]),
            undefined=jinja2.StrictUndefined,  # a typo in a user's template fails loudly, once, at the first render
            trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False, autoescape=False,
        )

    def only(self, agent: bool) -> LLMProposer | None:
        """This proposer over its agent models (agent=True) or its one-shot ones, sharing everything else (the seeded
        model choice, the calls in flight, the templates); None where it has no such model with a positive weight."""
        models = [m for m in self.models if m.agent == agent]
        if not any(m.weight > 0 for m in models):
            return None
        narrowed = copy.copy(self)  # shallow: the random generator, its lock and the call slots stay shared
        narrowed.models = models
        return narrowed

    @property
    def weight(self) -> float:
        """Its models' weight in all."""
        return sum(m.weight for m in self.models)

    def pick_model(self) -> ModelSpec:
        with self._rng_lock:
            return self.rng.choices(self.models, weights=[m.weight for m in self.models])[0]

    def render(self, template: str, context, tools: bool = False) -> list[dict]:
        """system (prompts/system.j2) + user (prompts/<template>.j2) from a PromptContext (or the same as a dict);
        `tools`: the model may call the context tools (the templates then point at them rather than quote the
        references). Template errors raise: they are config bugs."""
        if template not in TEMPLATES:
            raise ValueError(f"unknown template {template!r}; expected one of {', '.join(TEMPLATES)}")
        context = _shown({**(context.as_dict() if isinstance(context, PromptContext) else context),
                          "template": template, "tools": tools})
        system = self._env.get_template("system.j2").render(context).strip()
        user = self._env.get_template(f"{template}.j2").render(context).strip()
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def _call(self, litellm, model: str, messages: list[dict], **extra):
        kwargs = dict(model=model, messages=messages, **extra, timeout=self.timeout_s, temperature=self.temperature,
                      # Retries are ours (propose), not litellm's num_retries: the attempts are counted into the
                      # archived Proposal, the error kept is the last one with how many tries it took, Retry-After
                      # is honoured, the jitter does not touch the seeded model choice, and a user template error is
                      # never retried. litellm and the openai client must therefore not retry underneath.
                      num_retries=0,
                      drop_params=True)  # reasoning models (gpt-5, o3) reject temperature != 1: drop, don't fail
        if self.api_base:
            kwargs["api_base"] = self.api_base
            if litellm.validate_environment(model=model).get("missing_keys"):
                kwargs["api_key"] = "not-needed"  # local OpenAI-compatible servers take any key
        with self._slots:
            return litellm.completion(**kwargs)

    def uses_tools(self, model: str) -> bool:
        """Whether this model gets the context tools: --tools on, or auto and litellm says it calls functions."""
        if self.tools == "off" or self.tool_rounds == 0:
            return False
        if self.tools == "on":
            return True
        try:
            return bool(_litellm().supports_function_calling(model=model))
        except Exception:  # noqa: BLE001 - a model litellm does not know
            return False

    def _call_retrying(self, litellm, model: str, messages: list[dict], **extra):
        """(response, error, attempts): one model call with our retries (see _call)."""
        attempts, error = 0, None
        while True:
            attempts += 1
            try:
                return self._call(litellm, model, messages, **extra), None, attempts
            except Exception as exc:  # noqa: BLE001 - every failure becomes a recorded Proposal
                error = _describe(exc)
                if attempts > self.max_retries or not _is_retryable(exc, litellm):
                    if attempts > 1:
                        error = f"{error} (after {attempts} attempts)"
                    return None, error, attempts
                delay = min(_MAX_BACKOFF_S, self.backoff_s * 2 ** (attempts - 1))
                with self._rng_lock:
                    delay += self._jitter.uniform(0, 0.25 * delay)
                time.sleep(min(_MAX_BACKOFF_S, max(delay, _retry_after(exc))))

    def propose(self, template: str, context: dict, parent_source: str | None = None, toolbox=None,
                model: str | None = None) -> Proposal:
        """Ask one model for a candidate: `model` (the run's bandit picked it), or one picked at random by weight.
        Thread-safe; never raises for HTTP or reply trouble.

        With a toolbox (knowledge.Toolbox) and a model that calls functions, the model may call the context tools
        for up to `tool_rounds` rounds before it answers; every round's tokens and cost are counted, and each call
        is logged in `Proposal.tool_log`."""
        model = model or self.pick_model().name
        if parent_source is not None:  # a diff applies to the program as the prompt showed it
            parent_source = strip_test_header(parent_source)
        # an agent session (a toolbox with rounds of its own) has its tools whatever --tools says: they are its work
        tools = toolbox is not None and (toolbox.rounds is not None or self.uses_tools(model))
        messages = self.render(template, context, tools=tools)
        prompt = "\n\n".join(f"### {m['role']}\n{m['content']}" for m in messages)
        litellm = _litellm()
        start = time.monotonic()
        attempts, tokens_in, tokens_out, cost, log = 0, 0, 0, 0.0, []

        def done(source, err, reply=None):
            err = redact(err) if err else None
            return Proposal(source, err, template, model, prompt, reply, tokens_in, tokens_out, cost,
                            time.monotonic() - start, attempts, tuple(log))

        rounds = 0
        while True:
            # the tools stay declared on every call (providers want them while the messages hold tool calls); after
            # the last round the model is told to answer (tool_choice "none" is not honoured everywhere)
            extra = {"tools": toolbox.schemas, "tool_choice": "auto"} if tools else {}
            response, error, tries = self._call_retrying(litellm, model, messages, **extra)
            attempts += tries
            if response is None:
                return done(None, error or "no response")
            usage = getattr(response, "usage", None)
            round_in = int(getattr(usage, "prompt_tokens", 0) or 0)
            round_out = int(getattr(usage, "completion_tokens", 0) or 0)
            try:
                round_cost = float(litellm.completion_cost(completion_response=response) or 0.0)
            except Exception:  # noqa: BLE001 - no price for this model (local servers, new models)
                round_cost = 0.0
            tokens_in, tokens_out, cost = tokens_in + round_in, tokens_out + round_out, cost + round_cost
            try:
                choice = response.choices[0]
                message = choice.message
                reply, finish = message.content, getattr(choice, "finish_reason", None)
                calls = list(getattr(message, "tool_calls", None) or []) if tools else []
            except (AttributeError, IndexError):
                reply, finish, calls = None, None, []
            if not calls:
                break
            rounds += 1
            limit = toolbox.rounds or self.tool_rounds
            if rounds > limit:
                return done(None, f"the model still called tools after {limit} rounds", reply)
            messages = messages + [{"role": "assistant", "content": reply or None, "tool_calls": [
                {"id": c.id, "type": "function",
                 "function": {"name": c.function.name, "arguments": c.function.arguments or "{}"}} for c in calls]}]
            for n, call in enumerate(calls):
                began = time.monotonic()
                result = toolbox.run(call.function.name, call.function.arguments or "{}")
                messages.append({"role": "tool", "tool_call_id": call.id, "name": call.function.name,
                                 "content": result})
                first = n == 0  # a round's tokens and cost belong to the call that asked for its tools
                log.append({"round": rounds, "name": call.function.name,
                            "arguments": str(call.function.arguments or "")[:1000], "result": result[:4000],
                            "result_chars": len(result), "tokens_in": round_in if first else 0,
                            "tokens_out": round_out if first else 0, "cost": round_cost if first else 0.0,
                            "seconds": round(time.monotonic() - began, 3)})
            if toolbox.submitted is not None:  # an agent session ends with its submission
                return done(toolbox.submitted, None, reply)
            bound = toolbox.over(tokens_in + tokens_out, cost)
            if bound is not None:
                return done(None, f"the session stopped without submitting: {bound}", reply)
            if rounds == limit:
                messages.append({"role": "user", "content": f"That was the last of {limit} tool rounds: "
                                                            "reply now with the complete program."})
        if not reply:
            return done(None, f"the model returned no text (finish_reason={finish})", reply)
        source, err = parse_reply(reply, template, parent_source)
        if err and finish == "length":
            err = f"{err} (the reply was cut off at the output token limit)"
        return done(source, err, reply)


# -- reply parsing --------------------------------------------------------------------------------------------------
_FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+.-]*)[^\n]*\n(.*?)^[ \t]*```[ \t]*$", re.MULTILINE | re.DOTALL)
_DEFINES = re.compile(r"^(?:async[ \t]+)?def[ \t]+custom_kernel[ \t]*\(|^custom_kernel[ \t]*=", re.MULTILINE)
_DIFF = re.compile(
    r"^[ \t]*<{5,9}[ \t]*SEARCH[ \t]*\n(.*?)^[ \t]*={5,9}[ \t]*\n(.*?)^[ \t]*>{5,9}[ \t]*REPLACE[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
_CODE_START = re.compile(r"^(?:import |from \w|def |async def |class |@|\"\"\"|'''|#|[A-Za-z_]\w*\s*=)")


def _syntax_error(source: str) -> str | None:
    try:
        ast.parse(source)
    except SyntaxError as exc:
        return f"SyntaxError at line {exc.lineno}: {exc.msg}"
    except ValueError as exc:  # null bytes
        return f"SyntaxError: {exc}"
    return None


def _bare_code(reply: str) -> str | None:
    """The reply itself when it is code, else the code between leading and trailing prose lines, if any."""
    if _DEFINES.search(reply) and _syntax_error(reply) is None:
        return reply
    lines = reply.splitlines()
    first = next((i for i, line in enumerate(lines) if _CODE_START.match(line)), None)
    if first is None:
        return None
    last = len(lines)
    while last > first and lines[last - 1].strip() and not (
        lines[last - 1][:1].isspace() or _CODE_START.match(lines[last - 1]) or lines[last - 1][:1] in ")]}"
    ):
        last -= 1
    code = "\n".join(lines[first:last]).strip("\n") + "\n"
    return code if _DEFINES.search(code) else None


def _extract_program(reply: str) -> tuple[str | None, str | None]:
    blocks = [(lang.lower(), code) for lang, code in _FENCE.findall(reply)]
    python = [code for lang, code in blocks if lang in ("python", "py", "python3") and _DEFINES.search(code)]
    anyfence = [code for _, code in blocks if _DEFINES.search(code)]
    code = (python or anyfence or [None])[-1]
    if code is None and not blocks:
        code = _bare_code(reply)
    if code is None:
        if blocks:
            return None, "the reply's code blocks do not define custom_kernel"
        return None, "no code defining custom_kernel in the reply"
    return code, None


def _find_tolerant(lines: list[str], search: list[str]) -> int | None:
    target = [s.rstrip() for s in search]
    stripped = [s.rstrip() for s in lines]
    for i in range(len(lines) - len(target) + 1):
        if stripped[i:i + len(target)] == target:
            return i
    return None


def _apply_diff(parent: str, blocks: list[tuple[str, str]]) -> tuple[str | None, str | None]:
    current = parent
    for index, (search, replace) in enumerate(blocks, 1):
        shown = _one_line(next((s for s in search.splitlines() if s.strip()), ""), 80)
        if not search.strip():
            return None, f"diff block {index} of {len(blocks)} has an empty SEARCH section"
        if search in current:
            current = current.replace(search, replace, 1)
            continue
        lines = current.splitlines(keepends=True)
        search_lines = search.strip("\n").splitlines()
        at = _find_tolerant(lines, search_lines)
        if at is None:
            return None, f"diff block {index} of {len(blocks)} does not match the parent: {shown}"
        replacement = replace.strip("\n")
        replacement = replacement + "\n" if replacement else ""
        current = "".join(lines[:at]) + replacement + "".join(lines[at + len(search_lines):])
    return current, None


def parse_reply(reply: str, template: str, parent_source: str | None) -> tuple[str | None, str | None]:
    """(source, None) when the reply yields a program (parsing or not), else (None, one-line error)."""
    if template not in TEMPLATES:
        return None, f"unknown template {template!r}"
    if template == "diff_edit":
        blocks = _DIFF.findall(reply)
        if blocks:
            if parent_source is None:
                return None, "diff_edit reply but no parent source to apply it to"
            source, error = _apply_diff(parent_source, blocks)
        else:
            source, error = _extract_program(reply)  # a full program instead of a diff is accepted as a rewrite
            if error:
                error = f"no SEARCH/REPLACE block and {error[0].lower()}{error[1:]}"
    else:
        source, error = _extract_program(reply)
    if error:
        return None, error
    # Code that does not parse is still a program: the harness's load rung reports the SyntaxError with its line,
    # and the repair loop sends it back to the model, which can fix what it wrote.
    return source, None
