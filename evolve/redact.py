"""What counts as a secret, in one place: environment variables and option names that look like keys, tokens,
secrets, passwords or credentials. The sandbox keeps them from the evaluation's processes, the archive from the
options it records, and the proposer from error messages it stores."""
from __future__ import annotations

import os
import re

# a count of tokens (agent_tokens, max_tokens) names no secret; a token (HF_TOKEN, api_token) does
SECRET_NAME = re.compile(r"KEY|TOKEN(?!S)|SECRET|PASSWORD|CREDENTIAL", re.IGNORECASE)


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(str(name)))


def secret_values(environ=None) -> list[str]:
    """The values of secret-named environment variables long enough to recognise in text."""
    environ = os.environ if environ is None else environ
    return [v for k, v in environ.items() if len(v) >= 8 and is_secret_name(k)]


def redact(text: str, values=None) -> str:
    for value in secret_values() if values is None else values:
        text = text.replace(value, "***")
    return text


def strip_secret_keys(value):
    """A copy of value with every dict key that names a secret removed, at any depth."""
    if isinstance(value, dict):
        return {k: strip_secret_keys(v) for k, v in value.items() if not is_secret_name(k)}
    if isinstance(value, (list, tuple)):
        return [strip_secret_keys(v) for v in value]
    return value
