"""Generalization of the threshold model: shifted test sets, common corruptions, linear
probes (`perfsuite eval`; docs/generalization.md). Imports torch only where a model runs."""
