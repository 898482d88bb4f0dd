"""Candidate languages, one module each (`triton` today): the contract a candidate file is held to, the tables the
static check reads, and the text the prompt and README show. Another DSL is a new module here with its own rules."""
