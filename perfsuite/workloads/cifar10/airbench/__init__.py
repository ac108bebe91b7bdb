"""The airbench family of the cifar10 workload (docs/recipes.md).

Modules by concept: `workload` (`AirbenchWorkload`: data source, optimizer, step and hooks),
`presets` (`airbench`, `airbench_muon`, `cpu-fast`), `net` (the network and its patch
whitening), `optim` (Lookahead, the summed loss, Nesterov SGD and its schedule), `muon` (Muon
on the conv filters) and `views` (alternating flip, random translate, test-time views).
"""
