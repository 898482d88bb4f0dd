"""Where proposals come from: each strategy a file of its own (material, tuning, composing, model, repair), built and
ordered by registry.py, reading the run through base.View and answering with base.Proposal."""
from .base import Landing, Proposal, Services, Strategy, View
from .registry import REGISTERED, Entry, build, register

__all__ = ["Entry", "Landing", "Proposal", "REGISTERED", "Services", "Strategy", "View", "build", "register"]
