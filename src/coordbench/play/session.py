"""One seat a person plays: the meeting point of the episode (asyncio, the runner's thread)
and the play page (HTTP, the server's threads).

The episode asks a `Question` (what the seat sees, and the answers that are legal now) and
waits; the page reads the question, and the one browser session that holds the seat answers
it. An answer that is not among the legal ones is refused and the question stays open.
The episode stops waiting, as an errored episode (`SeatLeft`), when the page that holds the
seat goes away (it stops polling, or says it closes), when the decision timeout passes, or
when the server stops; it never turns a missing decision into an action.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from coordbench.runner.episode import SEAT_LEFT, ProviderFailed

POLL_GONE_S = 10.0  # a page silent this long is gone (it asks again at least every 5 s)
LEAVE_GRACE_S = 2.0  # a page that said it closes may come back this fast (a reload)


class SeatLeft(ProviderFailed):
    """The person's seat went unplayed (page closed, decision timeout, server stopped): the
    episode cannot be a result; it is recorded errored, no further episode of the session
    starts, and a resumed session plays it again."""

    detail_prefix = SEAT_LEFT

    def __init__(self, message: str) -> None:
        super().__init__(message, stop_run=True)


class IllegalAnswer(ValueError):
    """An answer the seat may not give now (the reason is one line)."""


@dataclass
class Question:
    """What the seat is asked: `phase` act (pick one of `choices`) or a protocol phase
    (speak, assign, memory: a free-text message, or nothing). `view` is the family's picture
    of the moment (text, a map, images); `choices` are [{"id", "label"}]."""

    id: int
    episode: str
    t: int
    phase: str
    view: dict[str, Any]
    choices: list[dict[str, Any]] = field(default_factory=list)
    free_text: bool = False
    asked_at: float = field(default_factory=time.monotonic)

    def public(self) -> dict[str, Any]:
        """Return the question as the page reads it."""
        return {"id": self.id, "episode": self.episode, "t": self.t, "phase": self.phase,
                "view": self.view, "choices": self.choices, "free_text": self.free_text}


class SeatSession:
    """The seat's state, shared by the episode and the page (every method is thread-safe)."""

    def __init__(self, seat: int, decision_timeout: float | None = None,
                 gone_after: float = POLL_GONE_S) -> None:
        self.seat = seat
        self.decision_timeout = decision_timeout
        self.gone_after = gone_after
        self.token = secrets.token_urlsafe(18)
        self._cond = threading.Condition()
        self._question: Question | None = None
        self._answer: tuple[int, Any] | None = None
        self._next_id = 0
        self._holder: str | None = None  # the browser session playing the seat
        self._seen = 0.0
        self._left_at: float | None = None  # when the holder's page said it closes
        self._stopped: str | None = None
        self.status = "waiting for the first episode"
        # how each episode of the session ended (the page shows the last one between
        # episodes and at the end): {"episode", "success", "termination", "steps",
        # "metrics", "viewer": {"command", "url"}}
        self.outcomes: list[dict[str, Any]] = []

    # -- the page's side ---------------------------------------------------------------------
    def hold(self, client: str) -> bool:
        """Return whether browser session `client` plays the seat: the first to ask holds
        it, any other may only watch; a page that closed (or went silent for the page
        timeout) gives the seat to the next one that asks."""
        with self._cond:
            now = time.monotonic()
            if self._holder is None or now - self._seen > self.gone_after:
                self._holder = client
                self._left_at = None
            if self._holder == client:
                self._seen = now
                return True
            return False

    def state(self, client: str, after: int | None = None) -> dict[str, Any]:
        """Return what the page shows (and note that the holder's page is alive). With
        `after` (the id of the question the page shows, 0 for none), wait until the open
        question is another one, the session stops, or half the page timeout (at most 5 s)
        passes: the page learns of a new question at once instead of at its next poll."""
        playing = self.hold(client)
        with self._cond:
            if after is not None:
                self._cond.wait_for(
                    lambda: (self._question.id if self._question else 0) != after
                    or self._stopped is not None, timeout=min(5.0, self.gone_after / 2))
            playing = self._holder == client  # the seat may have changed hands meanwhile
            if playing:
                self._seen = time.monotonic()
            q = self._question
            return {"seat": f"agent_{self.seat}", "playing": playing, "status": self.status,
                    "question": q.public() if q is not None else None,
                    "stopped": self._stopped, "outcomes": list(self.outcomes[-20:])}

    def answer(self, client: str, question: int, choice: Any = None, text: str | None = None
               ) -> None:
        """Take the holder's answer to question `question`: a choice id for an act
        question, a message (or None: silence) for a protocol phase; IllegalAnswer (one
        line) for another session, a stale question, or an answer not legal now."""
        with self._cond:
            if self._holder != client:
                raise IllegalAnswer("another page plays this seat; this one may only watch")
            q = self._question
            if type(question) is not int:
                raise IllegalAnswer("an answer names its question by its id (an integer)")
            if q is None or q.id != question:
                raise IllegalAnswer(f"question {question} is not open (the open one is "
                                    f"{'none' if q is None else q.id})")
            if q.free_text:
                if text is not None and not isinstance(text, str):
                    raise IllegalAnswer("a message is text")
                value: Any = (text or "").strip()[:2000] or None
            else:
                ids = {c["id"] for c in q.choices}
                if type(choice) is not int or choice not in ids:
                    raise IllegalAnswer(f"{choice!r} is not a legal action for "
                                        f"agent_{self.seat} at step {q.t}")
                value = choice
            self._answer = (q.id, value)
            self._cond.notify_all()

    def leave(self, client: str) -> None:
        """Note that the holder's page closed: the open question (if any) errors its
        episode, and the next page to open holds the seat."""
        with self._cond:
            if self._holder == client:
                self._holder = None
                self._left_at = time.monotonic()
                self._cond.notify_all()

    # -- the episode's side ------------------------------------------------------------------
    def episode_over(self, outcome: dict[str, Any]) -> None:
        """Note that an episode of the session ended (`outcome`: see `outcomes`): the page
        shows its final state and result instead of its last question."""
        with self._cond:
            self.outcomes.append(outcome)
            self._question = None
            how = "success" if outcome.get("success") else outcome.get("termination")
            self.status = (f"{outcome.get('episode')}: over after {outcome.get('steps')} "
                           f"steps ({how})")
            self._cond.notify_all()

    def stop(self, reason: str) -> None:
        """Stop the session (the server stops): every wait ends with SeatLeft."""
        with self._cond:
            self._stopped = reason
            self._cond.notify_all()

    async def ask(self, episode: str, t: int, phase: str, view: dict[str, Any],
                  choices: list[dict[str, Any]] | None = None, free_text: bool = False
                  ) -> tuple[Any, float]:
        """Return (the answer, seconds the person took) to a question; SeatLeft when the
        seat goes unplayed."""
        with self._cond:
            self._next_id += 1
            self._question = Question(self._next_id, episode, t, phase, view, choices or [],
                                      free_text)
            self._answer = None
            self._cond.notify_all()  # a page waiting for the next question
            self.status = f"{episode}: step {t}, your turn ({phase})"
            qid = self._question.id
        try:
            return await asyncio.to_thread(self._wait, qid)
        finally:
            with self._cond:
                if self._question is not None and self._question.id == qid:
                    self._question = None
                    self.status = f"{episode}: step {t}, the team acts"
                    self._cond.notify_all()

    def _gone(self, now: float) -> str | None:
        """Return why the seat has no page any more (None: it has one, or none came yet)."""
        if self._holder is not None and now - self._seen > self.gone_after:
            return "the play page stopped answering"
        if (self._holder is None and self._left_at is not None
                and now - self._left_at > min(LEAVE_GRACE_S, self.gone_after)):
            return "the play page was closed"
        return None

    def _wait(self, qid: int) -> tuple[Any, float]:
        with self._cond:
            q = self._question
            start = q.asked_at if q is not None else time.monotonic()
            while True:
                if self._answer is not None and self._answer[0] == qid:
                    return self._answer[1], round(time.monotonic() - start, 3)
                now = time.monotonic()
                if self._stopped is not None:
                    raise SeatLeft(f"seat agent_{self.seat} (human): {self._stopped}")
                gone = self._gone(now)
                if gone is not None:
                    raise SeatLeft(f"seat agent_{self.seat} (human): {gone}")
                if self.decision_timeout is not None and now - start > self.decision_timeout:
                    raise SeatLeft(f"seat agent_{self.seat} (human): no decision within the "
                                   f"--decision-timeout of {self.decision_timeout:g} s")
                self._cond.wait(0.2)
