"""perfsuite benchmarks: speed and overhead goals, measured side by side in one run."""
