"""The Inspect internals ccpt relies on, kept in this one module (nowhere else imports ``inspect_ai._*``).

Inspect (0.3.x) exports none of them; each is imported lazily and guarded, so a release that moves them degrades to
a fallback (named in each function) instead of breaking ccpt.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from inspect_ai.model import CachePolicy, GenerateConfig, Model

from ccpt.errors import CcptError


def user_error(exc: CcptError) -> Exception:
    """``exc`` as the exception Inspect shows as one line (its ``PrerequisiteError``), or ``exc`` itself (fallback)."""
    try:
        from inspect_ai._util.error import PrerequisiteError
    except ImportError:  # pragma: no cover - depends on the installed Inspect
        return exc
    return PrerequisiteError(str(exc))


def is_user_error(exc: BaseException) -> bool:
    """Whether ``exc`` is one of Inspect's own user-facing errors (matched by class name: no private import)."""
    return any(cls.__name__ == "PrerequisiteError" for cls in type(exc).__mro__)


# Inspect names a missing key in its PrerequisiteError's text only: "No [bold][blue]X_API_KEY[/blue][/bold] defined …"
_MISSING_KEY = re.compile(r"No (?:\[[a-z /]+\])*(\w+_API_KEY)(?:\[[a-z /]+\])* defined in the environment")


def missing_api_key(exc: BaseException) -> str | None:
    """The API-key variable Inspect says is not set, when ``exc`` is its error for a missing key."""
    found = _MISSING_KEY.search(str(getattr(exc, "message", ""))) if is_user_error(exc) else None
    return found[1] if found else None


def active_generate_config() -> GenerateConfig:
    """The generation config in force for the running sample (task + command line), or an empty one (fallback:
    the protocol's defaults then win over the command line's)."""
    try:
        from inspect_ai.model._generate_config import active_generate_config as active
    except ImportError:  # pragma: no cover - depends on the installed Inspect
        return GenerateConfig()
    return active()


@contextmanager
def roles_bound(roles: Mapping[str, Model | str]) -> Iterator[None]:
    """Within the block, Inspect's ``model_roles()`` returns ``roles`` (as while `inspect eval` builds tasks); a
    role bound by name only is for tasks that will not run (``--dry-run``). Fallback: a task loads its own judge."""
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


def guard_model(model: Model) -> Model:
    """``model`` with no retries in its provider's SDK client (the OpenAI SDK's two by default: ``--max-retries`` is
    then every retry there is; an explicit ``-M max_retries=N`` is kept) and its calls stopped at once when its endpoint
    is down (:mod:`ccpt.eval.endpoints`); a provider without ``Model.api`` is left as it is. Idempotent."""
    from ccpt.eval import endpoints
    from ccpt.io.provider_errors import error_text, is_unreachable

    api = getattr(model, "api", None)
    client = getattr(api, "client", None)
    model_args = getattr(api, "model_args", None)
    if hasattr(client, "max_retries") and not (isinstance(model_args, dict) and "max_retries" in model_args):
        if isinstance(model_args, dict):
            model_args["max_retries"] = 0  # a client rebuilt later (Inspect re-initialises providers) keeps it
        client.max_retries = 0
    if api is None or getattr(api, "_ccpt_guarded", False):
        return model
    generate = api.generate
    where = endpoints.endpoint_of(model)
    name = str(model)

    async def guarded(*args: Any, **kwargs: Any) -> Any:
        reason = endpoints.down(where)
        if reason is not None:
            raise endpoints.EndpointDown(name, where, reason)
        try:
            return await generate(*args, **kwargs)
        except Exception as exc:
            if is_unreachable(exc) and await endpoints.refuses_connections(where):
                endpoints.mark_down(where, error_text(exc))
                raise endpoints.EndpointDown(name, where, error_text(exc)) from exc
            raise

    api.generate = guarded
    api._ccpt_guarded = True
    return model


def task_args_of(task: object) -> dict[str, object]:
    """The arguments a task was built with, as Inspect records them in its log (``log.eval.task_args``)."""
    from inspect_ai._util.registry import registry_params

    return dict(registry_params(task))


def logged_args(model_args: Mapping[str, Any]) -> dict[str, Any]:
    """Model arguments as Inspect logs them: without credentials (``api_key``, ``aws_*``), never part of a run."""
    return {k: v for k, v in model_args.items() if k != "api_key" and not k.startswith("aws_")}


# Model arguments that say how to reach a model, not what it answers: kept out of the cache key with the credentials
# (a rotated key or a moved server must not ask everything again; the base URL is in Inspect's key already).
_CONNECTION_ARGS = frozenset({"base_url", "timeout", "max_retries", "http_client", "verbose"})


def cache_policy(model: Model, *, per_epoch: bool = True) -> CachePolicy:
    """Inspect's cache for ``model``'s calls, kept forever, scoped by the model's arguments (``-M``), which Inspect's
    key leaves out: else ``-M`` that changes the answers would be answered from another configuration's calls."""
    given = logged_args(getattr(model, "model_args", None) or {})
    args = {k: v for k, v in given.items() if k not in _CONNECTION_ARGS}
    scopes = {"model_args": json.dumps(args, sort_keys=True, default=str)} if args else {}
    return CachePolicy(expiry=None, per_epoch=per_epoch, scopes=scopes)


# Inspect's last line of an eval set whose task runs all finished (0.3.x, ``_eval/evalset.py``); matched by its text.
_SUCCESS_STATUS = "Completed all tasks in "


@contextmanager
def final_status_held() -> Iterator[Callable[[], None]]:
    """Within the block (an eval set), Inspect's "Completed all tasks in … successfully" is held back; the block is
    given the function that prints it, to call after the block once ccpt agrees (a task run Inspect finished under
    its ``fail_on_error`` may hold transient failures, which ccpt does not call finished).

    Inspect prints the line with ``print`` on rich's global console, whose settings its display replaces wholesale
    (``rich.reconfigure`` swaps the console's ``__dict__``: render hooks and patched attributes are lost). The
    console's class survives that, so for the block it is a subclass whose ``print`` holds that one line; nothing is
    built early, so nothing reaches stdout before ``--format json``. Fallback: a release that words the line
    otherwise prints it. A quiet console (``--display none``) prints nothing, so nothing is rendered for it."""
    import rich

    console = rich.get_console()
    base = type(console)
    held: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    class _Holding(base):  # type: ignore[valid-type, misc]
        def print(self, *objects: Any, **kwargs: Any) -> None:
            if objects and isinstance(objects[0], str) and _SUCCESS_STATUS in objects[0]:
                held.append((objects, kwargs))
                return
            if self.quiet:  # `--display none`: rich would lay out the results table (~1 s a run), then drop it
                return
            super().print(*objects, **kwargs)

    def release() -> None:
        for objects, kwargs in held:
            console.print(*objects, **kwargs)

    console.__class__ = _Holding
    try:
        yield release
    finally:
        console.__class__ = base
