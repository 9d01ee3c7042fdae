"""The Inspect internals ccpt relies on, kept in this one module (nowhere else imports ``inspect_ai._*``).

Inspect (0.3.x) exports none of them. Each is imported lazily and guarded, so a release that moves them degrades to
a documented fallback instead of breaking ccpt:

- ``PrerequisiteError``: the exception that `inspect eval` prints as one line instead of a traceback. A user
  error while building a task (a bad ``-T`` value, missing data) is raised as one. Fallback: the CcptError
  itself (still one line under `ccpt run`; a traceback under `inspect eval`).
- the model-roles context: `ccpt run` builds its tasks before handing them to Inspect, with its judge bound as the
  ``grader`` role the way `inspect eval` binds the command line's roles, so a task does not load its default
  judge for nothing. Fallback: nothing bound (the task then loads the default judge, which the run's own
  grader overrides: slower, never wrong).
- the active ``GenerateConfig`` (the task's merged with `inspect eval`'s and `ccpt run`'s generation options):
  the ``as-run`` protocol fills a provider's sampling defaults only where the user set nothing. Fallback: an
  empty config (the protocol's defaults then win over command-line options; per-call settings stay explicit).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from inspect_ai.model import GenerateConfig, Model

from ccpt.errors import CcptError


def user_error(exc: CcptError) -> Exception:
    """``exc`` as the exception Inspect shows as one line (its ``PrerequisiteError``), or ``exc`` itself."""
    try:
        from inspect_ai._util.error import PrerequisiteError
    except ImportError:  # pragma: no cover - depends on the installed Inspect
        return exc
    return PrerequisiteError(str(exc))


def is_user_error(exc: BaseException) -> bool:
    """Whether ``exc`` is one of Inspect's own user-facing errors (matched by class name: no private import)."""
    return any(cls.__name__ == "PrerequisiteError" for cls in type(exc).__mro__)


def active_generate_config() -> GenerateConfig:
    """The generation config in force for the running sample (task + command line), or an empty one."""
    try:
        from inspect_ai.model._generate_config import active_generate_config as active
    except ImportError:  # pragma: no cover - depends on the installed Inspect
        return GenerateConfig()
    return active()


@contextmanager
def roles_bound(roles: Mapping[str, Model | str]) -> Iterator[None]:
    """Within the block, Inspect's ``model_roles()`` returns ``roles`` (as while `inspect eval` builds tasks).

    A role bound by name only (a ``str``) is for building tasks that will not run (``ccpt run --dry-run``).
    """
    try:
        from inspect_ai.model._model import _model_roles
    except ImportError:  # pragma: no cover - depends on the installed Inspect
        yield
        return
    token = _model_roles.set(dict(roles))  # type: ignore[arg-type]
    try:
        yield
    finally:
        _model_roles.reset(token)


def task_args_of(task: object) -> dict[str, object]:
    """The arguments a task was built with, as Inspect records them in its log (``log.eval.task_args``)."""
    from inspect_ai._util.registry import registry_params

    return dict(registry_params(task))
