"""The training engine and what runs inside it: the clock, containment of instrumentation
failures, detours off the clock (FLOP count, profile window), the scheduler contract and the
progress line."""
