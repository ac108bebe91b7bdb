"""What one run achieved, read from its record: time to accuracy and why a run is left out
(`record_view`), inference latency, generalization, data-parallel ranks, and its cost on the
hardware that measured it (`cost`, `hardware_match`).
"""
