"""evolve: LLMs write GPU kernels; a sealed rung ladder decides which ones are correct and fast."""

__version__ = "0.1.0"
