"""The one runner: episode recording, the condition engine and its executors (imports only
`coordbench.core`)."""

from .conditions import (
    condition_values,
    play_concurrently,
    register,
    run_condition,
    run_conditions,
)
from .episode import Limits, Recorder, current_recorder, record_model_call
from .executors import EXECUTORS, check_executor, make_executor
from .suite import Case, ModelResources, PlayContext, Suite, Team

__all__ = ["EXECUTORS", "Case", "Limits", "ModelResources", "PlayContext", "Recorder", "Suite",
           "Team", "check_executor", "condition_values", "current_recorder", "make_executor",
           "play_concurrently", "record_model_call", "register", "run_condition",
           "run_conditions"]
