"""coordbench: measure how teams of agents coordinate, not only whether they finish."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("coordbench")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
