"""Coordination constructs D1-D4 (after CoCoBench) on the household engine."""
