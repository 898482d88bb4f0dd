"""Every default of a run, an evaluation and the commands, set once: config.py's dataclasses, the harness's
EvalOptions, the Python API and the CLI's options read these. It imports nothing, so `evolve --help` stays fast."""

DB = "runs/evolve.db"  # the archive
BENCH_DB = "runs/bench.db"  # evolve bench's archive
EVAL_TIMEOUT_S = 180.0  # one evaluation's wall-clock limit
LARGE_INPUT_BYTES = 1 << 30  # inputs this large a call (a KernelBench file at today's sizes) ...
LARGE_INPUT_TIMEOUT_S = 900.0  # ... get this limit: KernelBench softmax and RMSNorm took 315 s and 458 s on an H100
MAX_MEMORY_GB = 32.0  # host memory of all of an evaluation's candidate processes
TARGET = 0.95  # a run stops when its best reaches this fraction of the roofline (GPU)
SEED = 0
ISLANDS = 2
DIVERSITY = 0.5  # the share of parents drawn across the diversity archive's cells (docs/search.md, Diversity)
REPAIRS = 2  # load/compile failures sent back to the model
STAGNATION = 30  # evaluated candidates without an improvement before a run stops
MODEL_CHOICE = "bandit"  # with several models: each proposal's by gain per dollar (model_bandit.py), or "weights"
CONCURRENCY = 4  # model calls in flight at once
TUNE_SHARE = 0.2  # with a model, the share of steps given to the knob tuner
COMPOSE_SHARE = 0.25  # with a model, the share of steps that look for a shape-dispatch composite
LLM_TIMEOUT_S = 180.0  # one model reply
LLM_RETRIES = 4
TOOLS = "auto"  # the context tools: auto, on, off
TOOL_ROUNDS = 4  # model calls that may ask for tools, per proposal
AGENT_ROUNDS = 12  # --agent: model calls that may ask for tools in one session
AGENT_SECONDS = 1200.0  # --agent: wall time one session may take in all (model calls and tools)
AGENT_TOKENS = 500_000  # --agent: tokens one session may use
AGENT_DOLLARS = 2.0  # --agent: dollars one session may cost
PROFILE_TOP = 2  # the best this many correct kernels are profiled ...
PROFILE_EVERY = 10  # ... every this many evaluations
RETIME_TOP = 3  # the best this many re-timed against each other at the end of a GPU run
RETIME_ROUNDS = 3
FAIR_WINDOW = "15m"  # a win over a best timed longer ago, or on another card, is confirmed by re-timing it
FAIR_WINDOW_S = 900.0
