"""What perfsuite knows about devices, as pure data and rules: the spec table (`specs`), roofs
per math (`roofs`), math modes and policies (`maths`), kernel names (`kernels`), hardware
counter metrics (`counter_metrics`) and hardware names (`accelerators`).

Below capture and analysis: the runner measures and records with these names, the analyzers
judge with them. Torch-free; measuring lives in `perfsuite.ceilings` and `perfsuite.counters`.
"""
