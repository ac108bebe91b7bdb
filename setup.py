"""The package layout, which pyproject.toml cannot say: the source tree keeps `analyzers/` at
the top (capture -> record -> analyze -> present, each stage a folder), and it installs as
`perfsuite.analyzers`, so that nothing generic lands at the top level of site-packages.
Everything else about the distribution is in pyproject.toml."""

from setuptools import find_packages, setup

ANALYZERS = ["perfsuite.analyzers"] + [
    f"perfsuite.analyzers.{name}" for name in find_packages("analyzers")
]

setup(
    packages=find_packages(include=["perfsuite", "perfsuite.*"]) + ANALYZERS,
    package_dir={"perfsuite.analyzers": "analyzers"},
)
