"""The text of `perfsuite timeline`: its analyses, copies and rank-folder sections, which
`perfsuite/cli/timeline_cmd.py` prints."""
