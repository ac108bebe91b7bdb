"""The `digits` workload: scikit-learn's 8x8 digits, the embedded default (no download).

Modules: `workload` (PyTorch) and `tensorflow` (the same network, recipe and data in
TensorFlow, whose step, SGD and batch norm the TensorFlow cifar10 workload reuses).
"""
