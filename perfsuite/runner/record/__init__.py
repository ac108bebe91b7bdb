"""The run folder and its record: the Recorder, the environment section, the threshold
checkpoint."""
