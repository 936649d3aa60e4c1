"""`coordbench models ...`: the model registry."""

from __future__ import annotations

from pathlib import Path

import typer

from coordbench.errors import ConfigError

from .common import models_option, out

app = typer.Typer(no_args_is_help=True, help="Model registry: list and check aliases.")


@app.command("list")
def models_list(models: Path | None = models_option(),
                ) -> None:
    """List the model aliases this run knows (built-ins plus the registry file)."""
    from rich.table import Table

    from coordbench.llm.registry import load_registry

    table = Table(title="models")
    for col in ("alias", "provider", "model", "base_url", "images", "max conn"):
        table.add_column(col)
    for alias, spec in sorted(load_registry(models).models.items()):
        table.add_row(alias, spec.provider, spec.model, spec.base_url or "-",
                      "yes" if spec.supports_images else "no", str(spec.max_connections))
    out.print(table)


@app.command("check")
def models_check(alias: str = typer.Argument(..., help="Model alias."),
                 models: Path | None = models_option(),
                 ) -> None:
    """Make one ping call to a model; fail with one clear line if it cannot be reached."""
    import asyncio

    from coordbench.llm.client import HarnessSettings

    harness = HarnessSettings(str(models) if models else None, cache=False).build()
    harness.provider(alias)
    spec = harness.spec(alias)
    harness.registry.models[alias] = spec.model_copy(update={"max_retries": 1})
    done = asyncio.run(harness.check(alias))
    if done.error:
        where = spec.base_url or "the local provider"
        raise ConfigError(f"model {alias!r} at {where} failed: {done.error}")
    out.print(f"{alias}: ok ({done.latency_s:.2f} s, {done.prompt_tokens}+"
              f"{done.completion_tokens} tokens): {done.text.strip()[:60]!r}")
