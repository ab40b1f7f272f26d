"""Model specs (``--model``, ``%pi model``, ``c.PiMagics.model``) resolved to models, and
``--model faux:faux-1`` without a scripted faux provider: an honest stand-in.

The faux provider (``pi_notebook.ai.faux``) replays responses a script queued; it is how the
tutorials and tests run offline. Offered as the offline model, ``faux:faux-1`` must not fail
with "no provider 'faux'" when nobody registered one, nor pretend to be a model: the stand-in
answers every prompt with the same short text saying what it is and how to script it. A
provider registered with ``register_faux_provider`` (before or after) takes precedence, since
later model registrations win.
"""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError

from ...ai.faux import FauxRegistration, faux_assistant_message, register_faux_provider
from ...ai.models import get_models
from ...ai.models import resolve_model as catalogue_resolve_model
from ...ai.types import AssistantMessage, Model

FAUX_PROVIDER = "faux"

ANSWER = (
    "This is `faux:{model}`, a scripted offline stand-in, not a language model: it only replays "
    "responses that a script queued, and none are queued.\n\n"
    "To script it, run in a cell:\n\n"
    "```python\n"
    "import pi_notebook.ai.faux as pf\n"
    "faux = pf.register_faux_provider()\n"
    'faux.set_responses([pf.faux_assistant_message("Hello from the script.")])\n'
    "```\n\n"
    "then run `%%pi --model faux:faux-1` again (see `pi_notebook/ai/faux.py`). For real answers, "
    "pass a real model, e.g. `--model anthropic:claude-sonnet-4-5`."
)

_stand_in: FauxRegistration | None = None


def stand_in_model(model_id: str) -> Model | None:
    """The stand-in ``faux:<model_id>`` when no faux provider is registered, else ``None``."""
    global _stand_in
    if get_models(FAUX_PROVIDER):
        return None
    registration = register_faux_provider(provider=FAUX_PROVIDER, models=[{"id": model_id}])
    text = ANSWER.format(model=model_id)

    def answer(*_args: Any) -> AssistantMessage:
        registration.append_responses([answer])  # unscripted: every prompt gets the same answer
        return faux_assistant_message(text)

    registration.set_responses([answer])
    _stand_in = registration
    return registration.get_model(model_id)


def remove_stand_in() -> None:
    """Unregister the stand-in (tests; a later ``register_faux_provider`` overrides it anyway)."""
    global _stand_in
    if _stand_in is not None:
        _stand_in.unregister()
        _stand_in = None


def resolve_model(spec: str) -> Model:
    """``provider:id`` (or a unique bare id) -> a ``Model``; local servers such as
    ``ollama:llama3.2`` resolve without registration, and ``faux:<id>`` without a registered
    faux provider is the honest stand-in (``run/faux_stand_in.py``). Raises ``ValueError`` with a
    one-line reason."""
    try:
        return catalogue_resolve_model(spec)
    except KeyError as exc:  # ModelNotFoundError: its str() is already a clean sentence
        provider, _, model_id = spec.strip().partition(":")
        if provider == FAUX_PROVIDER and model_id:
            found = stand_in_model(model_id)
            if found is not None:
                return found
        raise ValueError(str(exc.args[0]) if exc.args else f"unknown model {spec!r}") from None


def model_option(spec: str) -> Model:
    """``resolve_model`` for a ``--model`` / ``%pi model`` value, failing as a ``UsageError``."""
    try:
        return resolve_model(spec)
    except ValueError as exc:
        raise UsageError(f"--model: {exc}") from None
