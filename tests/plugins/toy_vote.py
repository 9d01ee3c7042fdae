"""A toy method added in one file, as a plug-in package adds one (CONTRIBUTING.md, "Adding a method"):
self-consistency, three answers per instance and seed with the most common parsed one counted, on every task
(Task 3 included). tests/test_methods.py registers it through a ``ccpt.methods`` entry point; it is never registered
in other tests."""

from ccpt.methods import Method, majority

METHOD = Method(
    "vote",  # the name `--method` and the logs use
    "Majority vote",  # its label in reports
    solver="ccpt.eval.solvers:prompt_solver",  # ask its template (Base's) `samples` times per instance and seed
    samples=lambda options: 3,  # three answers per instance and seed
    reduce=majority,  # the most common parsed answer (Inspect's `mode` reducer); its cells the mean of its samples
    applies=lambda spec: True,  # every task, Task 3 included
)
