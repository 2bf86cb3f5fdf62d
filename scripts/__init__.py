"""scripts — the benchmark, experiment and report scripts as one package, so that they import
each other and the harness by name (`from scripts.harness import bench`), with no edit of the
import path. Each runs from the repository root as `python3 -m scripts.NAME` (the studies as
`python3 -m scripts.studies.NAME`); docs/scripts.md lists them."""
