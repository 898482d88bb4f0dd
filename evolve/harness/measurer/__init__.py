"""The measurer: the trusted process of an evaluation (`python -m evolve.harness.measurer.measurer`). It never
imports candidate code: it makes the inputs and references, reads the runner's outputs back itself, checks and times
them, and reports to the parent over a signed pipe. It imports nothing of the parent's folder."""
