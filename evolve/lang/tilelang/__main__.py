"""`python -m evolve.lang.tilelang` prints TileLang's rule table (docs/languages.md carries it)."""
from .rules import rule_table

print(rule_table())
