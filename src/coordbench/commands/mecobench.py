"""`coordbench mecobench ...`: household teams on MECoBench cases.

`mecobench run` is generated from the family's options (`suites/mecobench/options.py`).
"""

from __future__ import annotations

import typer

app = typer.Typer(no_args_is_help=True, help="MECoBench: household teams.")
