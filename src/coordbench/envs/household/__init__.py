"""A symbolic multi-room household simulator for teams (VirtualHome-format scene graphs)."""
