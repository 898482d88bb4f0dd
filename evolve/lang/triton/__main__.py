"""`python -m evolve.lang.triton` prints README's rule table."""
from .rules import readme_table

print(readme_table())
