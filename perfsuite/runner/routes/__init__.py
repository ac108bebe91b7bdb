"""The two routes into a run record: `perfsuite run` (the runner pulls a workload's steps, and
replays them for hardware counters) and `perfsuite.track` (a user's loop pushes them)."""
