"""The MECoBench suite: household team tasks, teams, protocols, runs."""
