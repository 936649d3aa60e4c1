"""A person in a seat: `coordbench play` serves a page on 127.0.0.1 through which a person
plays one seat of an episode with model, rule or learned teammates (`session.py`: the seat's
state; `server.py`: the page and its API; each family's `agents/<family>/human.py`: what the
seat sees and may do)."""
