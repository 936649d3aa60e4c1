"""Typed exceptions for user errors: each message names the thing that is wrong."""


class CoordbenchError(Exception):
    """Base class for errors caused by user input; the CLI prints them as one line."""


class ConfigError(CoordbenchError, ValueError):
    """An unknown configuration name or an invalid parameter value."""


class ActionError(CoordbenchError, ValueError):
    """An action index outside the action space, or an action array of the wrong shape."""


class RunDirError(CoordbenchError):
    """A run directory that is missing, corrupt, or was made by a different run spec."""
