"""`python -m bench [NAME...]`: run the project's benchmarks and print their ratios.

Each benchmark is a module `bench/<name>.py` with `main() -> None` that prints its own table.
`python -m bench NAME --option ...` hands the options to that one benchmark's `main(argv)`
(gpu_evidence takes them; see its --help).
"""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path

BENCHMARKS = [
    "overhead",
    "op_agreement",
    "trace_throughput",
    "flop_counter",
    "loader",
    "cifar_fast_steps",
    "api_open",
    "history",
]


def available() -> list[str]:
    """Every benchmark module in bench/ (the default list and the ones run by name only)."""
    here = Path(__file__).parent
    return sorted(p.stem for p in here.glob("*.py") if not p.stem.startswith("_"))


def main(argv: list[str]) -> int:
    options = [a for a in argv if a.startswith("-")]
    if options:  # NAME --opt ...: one benchmark, its options after its name
        if not argv or argv[0].startswith("-"):
            raise SystemExit("usage: python -m bench NAME [--option ...]")
        bench_main = importlib.import_module(f"bench.{argv[0]}").main
        if not inspect.signature(bench_main).parameters:
            print(f"bench: error: {argv[0]} takes no options", file=sys.stderr)
            return 2
        bench_main(argv[1:])
        return 0
    names = argv or BENCHMARKS
    known = available()
    unknown = [n for n in names if n not in known]
    if unknown:  # checked before any runs: a typo must not pass for a skipped benchmark
        print(
            f"bench: error: no benchmark {', '.join(map(repr, unknown))} "
            f"(known: {', '.join(known)})",
            file=sys.stderr,
        )
        return 2
    for name in names:
        module = importlib.import_module(f"bench.{name}")
        print(f"\n=== bench: {name} ===", flush=True)
        module.main()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
