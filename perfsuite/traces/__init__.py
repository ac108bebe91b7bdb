"""Chrome/Kineto trace files as written by the PyTorch profiler: the reader of a record's
`timeline.trace` sidecar format, used by capture (the counters) and by the timeline analyses.
Below both in the layers: it imports nothing above the record."""
