"""Measurements taken beside the training clock: telemetry, energy counters, batch-1
inference, hardware counters, model FLOPs, data-parallel communication."""
