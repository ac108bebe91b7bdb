"""The `imagenet` workload: ResNet-50 v1.5 to 93% top-5 (docs/imagenet.md).

Modules: `workload` (the seam: streaming image folders or synthetic inputs, top-1 and top-5),
`recipe` (presets and the progressive-resizing schedule in force) and `resnet` (the network,
with ResNet-18).
"""
