"""The run folder and what it holds: the Recorder and its record, the environment section, the
threshold checkpoint, the run's log, and the containment that turns an instrumentation failure
into a logged traceback and a flag."""
