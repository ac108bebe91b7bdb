"""The `cifar10` workload: the DAWNBench task, 94% top-1 on the 10,000 test images.

Modules by concept: `workload` (`Cifar10Workload`, the registered `cifar10`: both families'
presets, each call handed to the recipe's family), `task` (what the families share: task
fields, normalization, loading), `resnet9` (the DAWNBench-style ResNet-9 family), `airbench/`
(the airbench family), `data` (CIFAR-10 files: safe pickle reading, image folders) and
`tensorflow` (the ResNet-9 family in TensorFlow).
"""
