"""Code that runs beside candidate code or a foreign problem's code, in a jailed process: the runner (the one process
that imports the candidate) and its keeper, the jailed child (the static check, a problem's own functions), a foreign
problem's process and the profiler's child. It imports only harness/shared/, evolve.lang, the standard library and
torch: nothing of the measurer's or the parent's folder (tests/test_layers.py)."""
