"""`python -m perfsuite` is the same as the `perfsuite` console script."""

from perfsuite.cli import main

raise SystemExit(main())
