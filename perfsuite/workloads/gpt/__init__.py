"""The `gpt` workload: a GPT-style decoder trained to a validation loss, with MFU.

Modules by concept: `data` (text, token shards, synthetic tokens; fixed validation windows),
`model` (the decoder, its options and the KV cache), `muon` (the Muon optimizer),
`presets` (recipes and the learning-rate rule), `mfu` (the model FLOPs section),
`generate` (batch-1 generation latency), `workload` (the seam). See docs/gpt.md.
"""
