"""One run in a child process of `LocalExecutor`: RunOptions as JSON on stdin, a JSON reply
({"run_dir", "error", "fatal", "terminated"}) as the last line on stdout."""

from __future__ import annotations

import json
import sys

from perfsuite.runner.launch.executor import run_in_process
from perfsuite.runner.routes.run import RunOptions, Terminated


def main() -> int:
    options = RunOptions(**json.loads(sys.stdin.read()))
    reply: dict[str, object]
    try:
        run_dir, error, fatal = run_in_process(options)
        reply = {"run_dir": str(run_dir) if run_dir else None, "error": error, "fatal": fatal}
    except Terminated as exc:  # its record says "interrupted"; the parent stops the rest
        reply = {"run_dir": None, "error": str(exc), "fatal": False, "terminated": True}
    except KeyboardInterrupt:  # Ctrl-C: the record says so; the parent tells the user once
        return 130
    print(json.dumps(reply), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
