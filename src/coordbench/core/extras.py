"""The optional extras a command may need, checked before any work: one line naming the
extra to install instead of an ImportError deep inside a run."""

from __future__ import annotations

from coordbench.errors import ConfigError


def need_av() -> None:
    """Raise ConfigError unless PyAV (the video encoder) is installed."""
    try:
        import av  # noqa: F401
    except ImportError:
        raise ConfigError("videos need PyAV: pip install 'coordbench[video]'") from None


def need_torch() -> None:
    """Raise ConfigError unless PyTorch is installed."""
    try:
        import torch  # noqa: F401
    except ImportError:
        raise ConfigError("the learners need PyTorch: pip install 'coordbench[learn]' "
                          "(torch==2.13.0, CPU)") from None


def need_tensorboard() -> None:
    """Raise ConfigError unless TensorBoard (the live training logs' event writer) is
    installed."""
    try:
        import tensorboard.summary.writer.event_file_writer  # noqa: F401
    except ImportError:
        raise ConfigError("--log tensorboard needs TensorBoard: pip install "
                          "'coordbench[logs]'") from None
