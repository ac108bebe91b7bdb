"""The `cifar10` workload: the DAWNBench task, 94% top-1 on the 10,000 test images."""
