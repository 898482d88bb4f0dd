"""`python -m evolve.lang.cutedsl` prints CuTeDSL's rule table (docs/languages.md carries it)."""
from .rules import readme_table

print(readme_table())
