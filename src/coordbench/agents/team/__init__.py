"""The team layer every family shares: who sits (`seats`), how minds talk (`protocols`:
none, broadcast, discuss, leader, leader_vision, shared_memory), rule minds that coordinate
by claims (`claims`), the dials that make minds fail (`dials`) and the person's seat
(`human`). A family's own minds live in `agents/<family>/`."""
