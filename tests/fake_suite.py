"""A fake family on the one runner: it exercises what every suite relies on (resume, limits,
model-call recording, executors) without any simulator."""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass

from coordbench.core.trajectory import AgentSpec, MessageEvent, Trajectory
from coordbench.runner import Case, PlayContext, Recorder, play_concurrently, record_model_call


@dataclass(frozen=True)
class FakeSpec:
    """`steps` steps per episode, one model call per step of `tokens` tokens and `cost` $;
    `concurrent` plays the cases as concurrent coroutines, as model-driven teams do."""

    name: str = "a"
    steps: int = 4
    tokens: int = 10
    cost: float = 0.01
    concurrent: bool = False


class FakeSuite:
    name = "fake"
    headline = ("events",)

    def condition(self, spec: FakeSpec) -> str:
        return f"fake_{spec.name}"

    def manifest(self, spec: FakeSpec) -> dict:
        return asdict(spec)

    def cases(self, spec: FakeSpec, limit: int | None = None) -> list[Case]:
        return [Case(f"case{k:03d}", k) for k in range(6 if limit is None else limit)]

    def unit_size(self, spec: FakeSpec) -> int:
        return 2

    def play(self, spec: FakeSpec, cases: list[Case], ctx: PlayContext):
        if spec.concurrent:
            return play_concurrently(cases, lambda c: episode(spec, c, ctx), ctx)
        return ((c, asyncio.run(episode(spec, c, ctx))) for c in cases)

    def metrics(self, trajectory: Trajectory) -> dict[str, float | None]:
        return {"events": float(len(trajectory.events))}


async def episode(spec: FakeSpec, case: Case, ctx: PlayContext) -> Trajectory:
    rec = Recorder(suite="fake", episode_id=f"fake_{spec.name}/{case.key}",
                   task_id=f"task{case.data}", seed=case.data,
                   team=[AgentSpec(id="agent_0", driver="scripted")], params={"k": case.data},
                   limits=ctx.limits)
    stop = None
    t = 0
    with rec:
        while t < spec.steps:
            rec.t = t
            await asyncio.sleep(0)  # let concurrent episodes interleave
            # recorded exactly as the model harness records a call
            record_model_call({"agent": 0, "role": "agent", "phase": "act", "model": "fake",
                               "request_hash": f"{case.data}-{t}", "prompt_tokens": spec.tokens,
                               "completion_tokens": 0, "cost": spec.cost,
                               "reply": f"reply {t}"})
            rec.emit(MessageEvent(t=t, phase="broadcast", sender=0, content=f"step {t}"))
            rec.flush_calls()
            t += 1
            stop = rec.stop_reason()
            if stop:
                break
    return rec.finish(t, success=stop is None, stop=stop)


SUITE = FakeSuite()


def double(x: int) -> int:
    """A task for executor tests."""
    return 2 * x
