"""Cooperative MARL on STAT: one batched core, one readable module per method."""
