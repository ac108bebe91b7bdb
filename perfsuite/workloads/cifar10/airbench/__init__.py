"""The airbench family of the cifar10 workload (docs/recipes.md)."""
