"""The training engine and what runs inside it: the clock, the detours off the clock (FLOP
count, profile window), the scheduler contract and the progress line."""
