"""Where runs execute: one after another or side by side in child processes, on a Ray cluster,
or as the ranks of one data-parallel run under torchrun."""
