"""Where the MECoBench example task files shipped with coordbench live."""

from pathlib import Path

EXAMPLES = Path(__file__).parent / "data" / "mecobench"
PARALLEL_EXAMPLES = EXAMPLES / "parallel_examples.json"
SEQUENTIAL_EXAMPLES = EXAMPLES / "sequential_examples.json"
