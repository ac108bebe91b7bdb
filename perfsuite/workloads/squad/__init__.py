"""The `squad` workload: extractive question answering on SQuAD v1.1 (docs/squad.md).

Modules by concept: `workload` (the seam and its data source), `data` (the JSON files, read
and checked), `examples` (token ids and the train/judge split), `tokens` (tokenizer and
vocabulary), `model` (the reader), `score` (the official v1.1 scorer). `data`, `examples`,
`tokens` and `score` are pure Python: `perfsuite eval squad` uses them without torch.
"""
