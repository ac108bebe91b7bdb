"""`python -m bench [NAME...]`: run the project's benchmarks and print their ratios.

Each benchmark is a module `bench/<name>.py` with `main() -> None` that prints its own table.
"""

from __future__ import annotations

import importlib
import sys

BENCHMARKS = [
    "overhead",
    "op_agreement",
    "trace_throughput",
    "flop_counter",
    "loader",
    "cifar_fast_steps",
    "api_open",
]


def main(argv: list[str]) -> int:
    names = argv or BENCHMARKS
    for name in names:
        try:
            module = importlib.import_module(f"bench.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"bench.{name}":
                print(f"[bench] {name}: not present, skipped", flush=True)
                continue
            raise
        print(f"\n=== bench: {name} ===", flush=True)
        module.main()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
