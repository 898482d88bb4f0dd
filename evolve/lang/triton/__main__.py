"""`python -m evolve.lang.triton` prints Triton's rule table (docs/languages.md carries it)."""
from .rules import rule_table

print(rule_table())
