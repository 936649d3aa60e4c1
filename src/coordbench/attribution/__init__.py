"""Failure attribution: who made a failed episode fail, and at which step."""
