"""Trajectory files hold any text a model can emit and read back the same, line for line."""

from hypothesis import given, settings
from hypothesis import strategies as st

from coordbench.core.trajectory import (
    ActionRecord,
    EpisodeEndEvent,
    HouseholdStepEvent,
    MessageEvent,
    ModelCallEvent,
    Trajectory,
    TrajectoryHeader,
    clean_text,
)

# every code point, lone surrogates and every line separator included
ANY_TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=60)
SEPARATORS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def _trajectory(reply: str, message: str, raw: str) -> Trajectory:
    header = TrajectoryHeader(episode_id="c/k", suite="mecobench", task_id=message[:10],
                              seed=0, team=[], coordbench_version="t")
    events = [
        ModelCallEvent(t=0, agent=0, role="agent", phase="act", model="m", request_hash="h",
                       reply=reply, error=message, parse_error=raw),
        MessageEvent(t=0, phase="broadcast", sender=0, content=message),
        HouseholdStepEvent(t=0, actions=[ActionRecord(agent=0, action="wait", outcome="ok",
                                                      detail=reply, raw=raw,
                                                      args={message: raw})],
                           satisfied={}, completion=0.0),
        EpisodeEndEvent(t=1, termination="truncated", success=False, detail=reply),
    ]
    return Trajectory(header=header, events=events)


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT, ANY_TEXT, ANY_TEXT)
def test_any_text_round_trips(reply, message, raw):
    traj = _trajectory(reply, message, raw)
    text = traj.to_jsonl()
    text.encode("utf-8")  # always writable as UTF-8
    assert text.count("\n") == len(traj.events) + 1  # one physical line per record
    assert not any(sep in text[:-1].replace("\n", "") for sep in SEPARATORS)
    back = Trajectory.from_jsonl(text)
    want = _trajectory(clean_text(reply), clean_text(message), clean_text(raw))
    assert back.model_dump(exclude={"header": {"created"}}) == want.model_dump(
        exclude={"header": {"created"}})


def test_every_separator_and_a_lone_surrogate_by_name():
    nasty = "a" + SEPARATORS + "\ud800z\udfff"
    back = Trajectory.from_jsonl(_trajectory(nasty, nasty, nasty).to_jsonl())
    call = back.events[0]
    assert call.reply == "a" + SEPARATORS + "\ufffdz\ufffd"
    assert back.events[-1].type == "episode_end"


def test_lone_surrogate_in_a_dict_key_becomes_one_replacement_character():
    # pydantic writes a surrogate key as three U+FFFD without raising; ours must give one
    back = Trajectory.from_jsonl(_trajectory("", "k\udc80", "").to_jsonl())
    assert back.events[2].actions[0].args == {"k\ufffd": ""}
    assert back.header.task_id == "k\ufffd"
