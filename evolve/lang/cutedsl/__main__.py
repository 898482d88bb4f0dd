"""`python -m evolve.lang.cutedsl` prints CuTeDSL's rule table (docs/languages.md carries it)."""
from .rules import rule_table

print(rule_table())
