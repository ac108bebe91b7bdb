"""Many runs: stability of repeated runs, comparisons and their verdicts, threshold sweeps,
studies, leaderboards and the rank tests they use.
"""
