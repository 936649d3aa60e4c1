"""The `coordbench` subcommands, one module per family (options -> spec -> runner -> print)."""
