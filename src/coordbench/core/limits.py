"""The valid ranges of the CLI's numeric options shared by several commands.

Each bound is far above any real use and low enough that an out-of-range value fails at once
with one line (`core.files.check_range`) instead of allocating, looping or waiting for hours.
"""

MAX_SEED = 2**32 - 1  # numpy SeedSequence and Python's random accept any, the paper uses small
MAX_EPISODES = 1_000_000
MAX_STEPS = 100_000  # steps of one episode
MAX_WORKERS = 1024
MAX_IN_FLIGHT = 1024  # episodes played concurrently
MAX_CONNECTIONS = 1024  # concurrent calls per model
MAX_TOKENS = 10**9  # model tokens of one episode's team
MAX_REPLY_TOKENS = 1_000_000  # tokens of one model reply
MAX_COST = 1_000_000.0  # dollars
MAX_REPEATS = 1000  # seeds per model row of a study (pass@k, pass^k)
