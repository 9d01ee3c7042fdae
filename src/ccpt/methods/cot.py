"""Chain of Thought (paper §4.1): the CoT prompt (reason, then answer), one answer per instance and seed."""

from ccpt.methods.definition import Method
from ccpt.spec import COT, COT_TEMPLATE

METHOD = Method(COT, "CoT", solver="ccpt.eval.solvers:prompt_solver", template=COT_TEMPLATE)
