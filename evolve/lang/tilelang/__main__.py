"""`python -m evolve.lang.tilelang` prints TileLang's rule table (docs/languages.md carries it)."""
from .rules import readme_table

print(readme_table())
