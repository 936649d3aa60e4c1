"""`coordbench view DIR`: the episode viewer on 127.0.0.1, or one episode exported to a
self-contained HTML file (`--episode ID --export F.html`)."""

from __future__ import annotations

from pathlib import Path

import typer

from coordbench.commands.common import episode_option, err, out, port_option
from coordbench.errors import ConfigError


def view(
    run_dir: Path = typer.Argument(..., help="A run directory (or a folder of runs)."),
    port: int = port_option(8765, "Port on 127.0.0.1 (0 picks a free one)."),
    episode: str | None = episode_option("CONDITION/KEY (the header's episode_id) of the "
                                         "episode to export."),
    export_file: Path | None = typer.Option(None, "--export", help="Write that episode to "
                                            "this HTML file (one file, opens offline) and "
                                            "exit."),
) -> None:
    """Browse a run's conditions and episodes: a timeline per agent, a step slider, the
    state at each step. Serves on 127.0.0.1 only; Ctrl-C stops it."""
    from coordbench.core.files import check_range

    check_range("--port", port, 0, 65535)
    if (episode is None) != (export_file is None):
        raise ConfigError("--episode and --export go together: --episode ID --export F.html")
    if export_file is not None:
        from coordbench.viewer.export import export

        path = export(run_dir, episode or "", export_file)
        out.print(f"wrote {path}")
        return
    from coordbench.viewer.server import make_server, url_of

    server, viewer = make_server(run_dir, port)
    out.print(f"coordbench viewer: {url_of(server)}  (Ctrl-C stops it)", highlight=False)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        err.print("viewer stopped")
    finally:
        server.server_close()
        viewer.metrics.close()
