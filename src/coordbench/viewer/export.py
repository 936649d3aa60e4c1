"""One episode as a single self-contained HTML file: the viewer's page with its CSS, its
script and the episode's payload inlined, so it opens offline (papers, bug reports)."""

from __future__ import annotations

from pathlib import Path

from coordbench.core.atomic import write_atomic
from coordbench.core.files import check_out_file
from coordbench.core.rundir import RunDir
from coordbench.errors import ConfigError

from .episode import payload
from .server import dumps, static_text

_CSS_TAG = '<link rel="stylesheet" href="/static/style.css">'
_JS_TAG = '<script src="/static/app.js"></script>'


def resolve(run: RunDir, episode: str) -> tuple[str, str]:
    """Return (condition, key) of `episode` given as CONDITION/KEY (the header's
    episode_id) or as a KEY that only one condition has; ConfigError naming what exists."""
    if "/" in episode:
        cond, key = episode.rsplit("/", 1)
        if cond not in run.conditions:
            raise ConfigError(f"--episode {episode}: no condition {cond!r} in {run.path}")
        if key not in run.episode_keys(cond):
            raise ConfigError(f"--episode {episode}: condition {cond} has no episode {key!r}")
        return cond, key
    owners = [c for c in run.conditions if episode in run.episode_keys(c)]
    if len(owners) == 1:
        return owners[0], episode
    if not owners:
        raise ConfigError(f"--episode {episode}: no condition of {run.path} has it; give "
                          "CONDITION/KEY (the episode_id in the file's header)")
    raise ConfigError(f"--episode {episode}: {len(owners)} conditions have that key; give "
                      f"CONDITION/KEY, e.g. {owners[0]}/{episode}")


def html(run: RunDir, condition: str, key: str) -> str:
    """Return the self-contained HTML page of one episode."""
    page = static_text("index.html")
    data = dumps({"episode": payload(run, condition, key)})
    # "</" would close the script element early; JSON allows it escaped
    data = data.replace("</", "<\\/").replace("<!--", "<\\!--")
    css = static_text("style.css")
    js = static_text("app.js").replace("</script", "<\\/script")
    page = page.replace(_CSS_TAG, f"<style>\n{css}\n</style>")
    page = page.replace(_JS_TAG, f'<script id="cb-data" type="application/json">{data}'
                                 f"</script>\n<script>\n{js}\n</script>")
    return page


def export(run_path: Path, episode: str, out: Path) -> Path:
    """Write episode `episode` of the run at `run_path` to `out` as one HTML file; return
    the path written."""
    run = RunDir.open(run_path)
    cond, key = resolve(run, episode)
    check_out_file(out, "--export")
    write_atomic(out, html(run, cond, key))
    return out
