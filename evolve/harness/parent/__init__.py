"""Code that runs in evolve's own process (the parent), and in the trusted helpers it starts that run no candidate
code: the fork server, the memory readers and the warden. `evaluate` (ladder.py) decides every verdict here, from
what the measurer reports on its signed channel; nothing a runner says reaches it otherwise."""
