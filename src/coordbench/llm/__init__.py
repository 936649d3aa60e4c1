"""Model access for coordbench: registry, clients, cache, accounting, prompts, parsing."""
