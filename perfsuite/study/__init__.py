"""Studies: lesion, factor and batch-size analyses built from the optimization switches.

`spec` says what a study is, `plan` which configurations it runs, `folder` how its folder and
`study.json` look, `execute` runs what is missing through an executor. The analysis is pure
and lives in `perfsuite.analyzers.runs.study`. See docs/studies.md.
"""
