"""The household engine on real MECoBench task files: loading, every rule, the oracle."""

import json

import pytest

from coordbench.agents.household.oracle import OracleTeam
from coordbench.envs.household.actions import Action
from coordbench.envs.household.engine import HouseholdEnv
from coordbench.envs.household.task import load_tasks
from coordbench.errors import ConfigError
from coordbench.suites.mecobench.instances import EXAMPLES as DATA


def tasks(kind):
    return load_tasks(DATA / f"{kind}_examples.json")


def solve(task, n, seed=0):
    env = HouseholdEnv(task, n, seed)
    team = OracleTeam(env)
    for _ in range(task.team_steps(n)):
        outs = env.step(team.act())
        assert all(o.ok for o in outs), [o for o in outs if not o.ok]
        if env.success():
            break
    return env


@pytest.mark.parametrize("kind", ["parallel", "sequential"])
def test_all_real_cases_load_and_the_oracle_solves_them(kind):
    loaded = tasks(kind)
    assert len(loaded) == 3
    for task in loaded:
        sizes = [2] if kind == "sequential" else [1, 2, 3, 4, 5]
        for n in sizes:
            env = solve(task, n)
            assert env.success(), (task.task_id, n)
            assert env.t * n <= task.budget()


def test_real_goal_and_topology():
    seq = tasks("sequential")
    t = seq[0]
    assert [(s.key, s.count, s.targets) for s in t.subgoals] == [
        ("on_pudding_380", 1, (380,)), ("on_cupcake_380", 1, (380,))]
    assert t.zones == [[73, 206], [344]] and 371 in t.handover_doors
    assert t.scene.doors[371] == (206, 344) and t.scene.doors[225] == (73, 206)
    # the chain's doorjamb id differs from the topology's door id: both are accepted
    assert set(seq[1].handover_doors) == {332, 150}
    assert t.budget() == 80 and t.team_steps(2) == 40
    par = tasks("parallel")[0]
    assert par.budget() == 60 and par.team_steps(4) == 15 and par.budget("noisy") == 80
    assert par.budget("none") == 80 and par.budget("no_appearance") == 60


@pytest.fixture
def kitchen():
    task = tasks("parallel")[0]
    return task, HouseholdEnv(task, 2, seed=3)


def go(env, *actions):
    return [o.code for o in env.step(list(actions))]


def test_grab_needs_visibility_and_reach(kitchen):
    task, env = kitchen
    env.room = [206, 206]
    env.pos = [task.scene.room_center(206)] * 2
    W = Action("wait")
    assert go(env, Action("grab", obj=467), W)[0] == "not_visible"  # cupcake is in the bedroom
    env.pos = [(-4.0, -9.4)] * 2  # a kitchen corner, 5.4 m from the pudding: seen, not reached
    assert go(env, Action("grab", obj=471), W)[0] == "too_far"
    assert go(env, Action("walk", obj=471), W) == ["ok", "ok"]
    assert go(env, Action("grab", obj=471), W) == ["ok", "ok"]
    assert env.held[0] == [471]
    assert go(env, W, Action("grab", obj=471)) == ["ok", "held_by_other"]


def test_hands_limit_and_containers(kitchen):
    task, env = kitchen
    env.room = [206, 206]
    W = Action("wait")
    go(env, Action("walk", obj=306), W)  # the closed fridge holds the wine (470)
    assert go(env, Action("grab", obj=470), W)[0] == "not_visible"
    assert go(env, Action("open", obj=306), W)[0] == "ok"
    assert go(env, Action("open", obj=306), W)[0] == "already_open"
    assert go(env, Action("walk", obj=470), W)[0] == "ok"
    assert go(env, Action("grab", obj=470), W)[0] == "ok"
    go(env, Action("walk", obj=271), W)
    assert go(env, Action("grab", obj=271), W)[0] == "ok"  # waterglass: both hands now full
    go(env, Action("walk", obj=272), W)
    assert go(env, Action("grab", obj=272), W)[0] == "hands_full"
    go(env, Action("walk", obj=306), W)
    assert go(env, Action("close", obj=306), W)[0] == "hands_full"
    assert go(env, Action("put_in", obj=470, target=306), W)[0] == "ok"
    assert go(env, Action("close", obj=306), W)[0] == "ok"
    assert go(env, Action("put_in", obj=271, target=306), W)[0] == "closed"
    assert go(env, Action("put_on", obj=271, target=306), W)[0] in ("wrong_target", "ok")
    assert go(env, Action("put_on", obj=999999, target=306), W)[0] == "invalid"


def test_same_step_conflicts_have_one_seeded_winner(kitchen):
    task, _ = kitchen
    winners = set()
    for seed in range(12):
        env = HouseholdEnv(task, 2, seed=seed)
        env.room = [206, 206]
        env.pos = [env.node_pos[306]] * 2
        codes = go(env, Action("open", obj=306), Action("open", obj=306))
        assert sorted(codes) == ["conflict_lost", "ok"]
        winners.add(codes.index("ok"))
        again = HouseholdEnv(task, 2, seed=seed)
        again.room, again.pos = [206, 206], [again.node_pos[306]] * 2
        assert go(again, Action("open", obj=306), Action("open", obj=306)) == codes
    assert winners == {0, 1}


def test_unknown_things_are_invalid_outcomes_not_exceptions(kitchen):
    _, env = kitchen
    W = Action("wait")
    assert go(env, Action("fly"), W)[0] == "invalid"
    assert go(env, Action("grab", obj=None), W)[0] == "invalid"
    assert go(env, Action("walk_to_room", room="attic"), W)[0] == "invalid"
    assert go(env, Action("walk_to_door", target=380), W)[0] == "invalid"
    assert go(env, Action("handover", obj=471, to_agent=7), W)[0] == "invalid"


def test_zones_and_handover_rules():
    task = tasks("sequential")[0]
    env = HouseholdEnv(task, 2, seed=0)
    W = Action("wait")
    assert go(env, Action("walk_to_room", room="livingroom"), W)[0] == "out_of_zone"
    assert go(env, W, Action("walk_to_room", room="kitchen"))[1] == "out_of_zone"
    go(env, Action("walk_to_room", room="kitchen"), W)
    go(env, Action("walk", obj=471), W)
    assert go(env, Action("grab", obj=471), W)[0] == "ok"
    go(env, Action("walk_to_door", target=371), W)
    # receiver far away: too far; receiver not receiving: not ready
    assert go(env, Action("handover", obj=471, to_agent=1), Action("receive"))[0] == "too_far"
    go(env, W, Action("walk_to_door", target=371))
    assert go(env, Action("handover", obj=471, to_agent=1),
              Action("walk_to_room", room="livingroom"))[0] == "receiver_not_ready"
    go(env, W, Action("walk_to_door", target=371))
    assert go(env, Action("handover", obj=471, to_agent=1), Action("receive")) == ["ok", "ok"]
    assert env.held == [[], [471]]


def test_malformed_task_files_name_file_task_and_field(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(ConfigError, match="bad.json: not valid JSON"):
        load_tasks(bad)
    task = json.loads((DATA / "parallel_examples.json").read_text())[0]
    task["task_goal"] = {"0": {"on_pudding": 1}}
    bad.write_text(json.dumps([task]))
    with pytest.raises(ConfigError, match=r"bad.json\[0\] \(task_id 0\): field 'task_goal'"):
        load_tasks(bad)
    task["task_goal"] = {"0": {"on_pudding_380": 1}}
    del task["init_graph"]["nodes"][3]["class_name"]
    bad.write_text(json.dumps([task]))
    with pytest.raises(ConfigError, match=r"task_id 0.*init_graph.nodes\[3\]"):
        load_tasks(bad)


def test_views_are_deterministic_labelled_pngs_stored_once(tmp_path):
    from coordbench.envs.household.render import ImageStore, png_bytes, render_agent
    from coordbench.suites.mecobench.episode import HouseholdSpec, run_case

    task = tasks("parallel")[0]
    env = HouseholdEnv(task, 2, seed=0)
    a, b = png_bytes(render_agent(env, 0)), png_bytes(render_agent(env, 0))
    assert a == b and a[:8] == b"\x89PNG\r\n\x1a\n"
    store = ImageStore(tmp_path)
    assert store.put(a) == store.put(b) and len(list((tmp_path / "images").iterdir())) == 1
    tr = run_case(task, HouseholdSpec("parallel", 2, "leader_vision"), 0, "x", images=store)
    steps = [e for e in tr.events if e.type == "household_step"]
    assert set(steps[0].images) == {"agent_0", "agent_1", "team"}
    for e in steps:
        for digest in e.images.values():
            assert (tmp_path / "images" / f"{digest}.png").is_file()


def test_view_labels_never_overlap_on_the_v1_scenes():
    from PIL import Image, ImageDraw

    from coordbench.envs.household.render import SIZE, VIEWS, label_layout, view_shapes
    from coordbench.suites.mecobench.instances import load_suite

    draw = ImageDraw.Draw(Image.new("RGB", (SIZE, SIZE)))
    labels = crowded = 0
    for task in load_suite("v1")[:24]:
        env = HouseholdEnv(task, 2, seed=0)
        for agent in range(2):
            for _, yaw in VIEWS:
                shapes = view_shapes(env, agent, yaw)
                rects = [r for _, _, r in label_layout(draw, shapes)]
                labels += len(rects)
                crowded += len(shapes) >= 4
                for i, a in enumerate(rects):
                    assert 0 <= a[1] and a[3] <= SIZE + 1
                    for b in rects[:i]:
                        assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3]
                                    and b[1] < a[3]), (task.task_id, agent, yaw, a, b)
    assert labels > 200 and crowded > 10  # the scenes are busy enough to need placing


def test_a_model_gets_one_square_grid_per_agent_each_object_labelled_once():
    from PIL import Image, ImageDraw

    from coordbench.envs.household.render import (
        LABEL_PX,
        SIZE,
        VIEWS,
        label_layout,
        label_owners,
        render_agent,
        render_team,
        view_shapes,
    )
    from coordbench.suites.mecobench.instances import load_suite

    task = load_suite("v1")[5]
    env = HouseholdEnv(task, 3, seed=0)
    assert render_agent(env, 0).size == (2 * SIZE, 2 * SIZE) == (512, 512)
    assert render_team(env).size == (1032, 1032)  # two agents a row, 8 px between them
    # scaled to 336 px, a label stays about 9 px high
    assert LABEL_PX * 336 / (2 * SIZE) >= 9
    draw = ImageDraw.Draw(Image.new("RGB", (SIZE, SIZE)))
    seen_twice = 0
    for task in load_suite("v1")[:24]:
        env = HouseholdEnv(task, 2, seed=0)
        views = [view_shapes(env, 0, yaw) for _, yaw in VIEWS]
        owners = label_owners(views)
        texts = [t for shapes, own in zip(views, owners, strict=True)
                 for _, t, _ in label_layout(draw, shapes, own)]
        assert len(texts) == len(set(texts)) == len({n for v in views for _, n, _, _ in v})
        seen_twice += sum(len(v) for v in views) - len(texts)
    assert seen_twice > 0  # objects across two views exist, and are labelled once
