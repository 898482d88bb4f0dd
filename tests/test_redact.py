"""One rule for what is secret: the evaluation's environment, the archive's recorded options and stored error
messages all drop or mask the same names."""
from pathlib import Path

from evolve.harness.parent.sandbox import _env
from evolve.redact import redact, strip_secret_keys


def test_the_same_names_are_secret_everywhere(monkeypatch, tmp_path):
    names = ["OPENAI_API_KEY", "HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "GOOGLE_APPLICATION_CREDENTIALS"]
    for name in names:
        monkeypatch.setenv(name, f"value-of-{name.lower()}")
    monkeypatch.setenv("PLAIN_SETTING", "keep-me-please")
    env = _env("t", Path(tmp_path), {})
    assert not any(name in env for name in names) and env["PLAIN_SETTING"] == "keep-me-please"
    options = {name.lower(): "x" for name in names} | {"seed": 1, "nested": [{"api_key": "y", "model": "m"}]}
    assert strip_secret_keys(options) == {"seed": 1, "nested": [{"model": "m"}]}
    text = " ".join(f"value-of-{name.lower()}" for name in names) + " keep-me-please"
    assert redact(text) == " ".join(["***"] * len(names)) + " keep-me-please"


def test_a_count_of_tokens_is_kept_where_a_token_is_not():
    """An agent session's bound on tokens is a setting the run records; a token of any spelling is a secret."""
    options = {"agent_tokens": 900, "max_tokens": 10, "api_token": "t", "HF_TOKEN": "t", "tokenizer": "x"}
    assert strip_secret_keys(options) == {"agent_tokens": 900, "max_tokens": 10}
