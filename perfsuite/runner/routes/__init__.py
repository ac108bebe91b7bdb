"""The two routes into a run record: `perfsuite run` (the runner pulls a workload's steps) and
`perfsuite.track` (a user's loop pushes them)."""
