"""Base (paper §4.1): the task prompt, one answer per instance and seed. The only method Task 3 has."""

from ccpt.methods.definition import Method
from ccpt.spec import BASE

METHOD = Method(BASE, "Base", solver="ccpt.eval.solvers:prompt_solver", applies=lambda spec: True)
