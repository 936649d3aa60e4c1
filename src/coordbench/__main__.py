"""`python -m coordbench` runs the command line."""

from coordbench.cli import main

main()
