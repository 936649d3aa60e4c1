"""One episode as a single self-contained HTML file: the viewer's page with its CSS, its
script and the episode's payload inlined, so it opens offline (papers, bug reports)."""

from __future__ import annotations

from pathlib import Path

from coordbench.core.atomic import write_atomic
from coordbench.core.files import check_out_file
from coordbench.core.rundir import RunDir

from .episode import payload
from .server import dumps, static_text

_CSS_TAG = '<link rel="stylesheet" href="/static/style.css">'
_JS_TAG = '<script src="/static/app.js"></script>'


MAX_INLINE_IMAGES = 20_000_000  # bytes of agent views an export carries; beyond, it says so


def inline_images(run: RunDir, episode: dict) -> dict[str, str]:
    """Return {sha256: PNG data URL} of the agent views the episode's steps name (stored by
    `--images`), or {} with the episode marked when they would pass MAX_INLINE_IMAGES."""
    import base64

    shas = {h for team in episode["timeline"]["team"] for h in (team.get("images") or {}).values()}
    paths = [run.path / "images" / f"{h}.png" for h in sorted(shas)]
    paths = [p for p in paths if p.is_file()]
    if sum(p.stat().st_size for p in paths) > MAX_INLINE_IMAGES:
        episode["images_left_out"] = f"{len(paths)} agent views are over {MAX_INLINE_IMAGES:,} " \
                                     f"bytes; they are in {run.path / 'images'}"
        return {}
    return {p.stem: "data:image/png;base64," + base64.b64encode(p.read_bytes()).decode()
            for p in paths}


def html(run: RunDir, condition: str, key: str) -> str:
    """Return the self-contained HTML page of one episode (its agent views inlined)."""
    page = static_text("index.html")
    episode = payload(run, condition, key)
    episode["image_data"] = inline_images(run, episode)
    data = dumps({"episode": episode})
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
    cond, key = run.find_episode(episode)
    check_out_file(out, "--export")
    write_atomic(out, html(run, cond, key))
    return out
