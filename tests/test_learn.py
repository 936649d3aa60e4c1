"""STAT learners: every method trains (smoke), and QMIX learns to beat random valid play."""

import json

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from coordbench.cli import app
from coordbench.envs.stat.config import get_config
from coordbench.envs.stat.layouts import paper_layout
from coordbench.envs.stat.vec import StatVecEnv
from coordbench.errors import ConfigError
from coordbench.learn.coma import lambda_returns, masked_probs
from coordbench.learn.core import (
    SPLIT_FIRST_LAYER_AT,
    Replay,
    SharedAgentQ,
    evaluate,
    masked_argmax,
)
from coordbench.learn.dqn import DENSE_ROW_AT, decode, encode, joint_mask, valid_max
from coordbench.learn.methods import (
    METHODS,
    CheckpointError,
    load_checkpoint,
    make,
    paper_config,
    save_checkpoint,
    train,
)


@pytest.mark.parametrize("algo", sorted(METHODS))
def test_every_method_trains_and_evaluates(algo):
    tc = paper_config("3A-6T-5x3", algo, total_steps=3_000, eval_every=1_500,
                      learning_starts=500, num_envs=16, eval_episodes=5)
    res = train(tc)
    assert res["updates"] > 0 and len(res["curve"]) == 3
    assert 100 < res["final_return"] < 250 and res["final"]["success"] == 1.0
    steps = [c["step"] for c in res["curve"]]
    assert steps[0] == 0 and 1_500 <= steps[1] < 3_000 <= steps[2]


def test_paper_settings_per_method_and_size_class():
    assert (paper_config("3A-6T-5x3", "dqn").lr, paper_config("3A-6T-5x3", "dqn").hidden) == \
        (3e-4, 128)
    big = paper_config("5A-25T-50x30", "fdqn")
    assert (big.lr, big.eps_frac, big.total_steps, big.grad_clip) == (3e-4, 0.4, 20_000_000, 1.0)
    assert paper_config("5A-12T-10x6", "qtran").eps_frac == 0.4
    coma_tc = paper_config("3A-6T-5x3", "coma", total_steps=1_000_000)
    assert (coma_tc.lr, coma_tc.eps_start, coma_tc.eps_frac) == (5e-4, 0.5, 0.1)


def test_dqn_refuses_joint_spaces_it_cannot_enumerate():
    with pytest.raises(ConfigError, match=r"\(3\+12\)\^5 = 759,375"):
        paper_config("5A-12T-10x6", "dqn")
    assert paper_config("3A-12T-10x6", "dqn").config == "3A-12T-10x6"  # 15^3 = 3375 is fine
    with pytest.raises(ConfigError, match="unknown algorithm 'ppo'"):
        paper_config("3A-6T-5x3", "ppo")


def test_joint_action_encoding_and_mask_match_brute_force():
    rng = np.random.default_rng(0)
    masks = torch.from_numpy(rng.random((4, 3, 5)) < 0.5)
    jm = joint_mask(masks)
    for b in range(4):
        for idx in range(125):
            a = decode(torch.tensor([idx]), 3, 5)[0]
            assert bool(jm[b, idx]) == all(bool(masks[b, i, a[i]]) for i in range(3))
            assert encode(a.unsqueeze(0), 5).item() == idx


def test_dqn_chosen_q_equals_the_full_output_and_its_gradient():
    tc = paper_config("3A-12T-10x6", "dqn", seed=3)
    cfg = get_config(tc.config)
    m = make(tc)
    g = torch.Generator().manual_seed(0)
    obs = torch.rand(64, cfg.obs_dim, generator=g) * 4
    actions = torch.randint(0, cfg.num_actions, (64, cfg.agents), generator=g)
    fast = m.chosen_q(obs, actions)
    (fast.square().sum()).backward()
    grads_fast = [p.grad.clone() for p in m.q.parameters()]
    m.q.zero_grad()
    full = m.q(obs).gather(1, encode(actions, cfg.num_actions).unsqueeze(1)).squeeze(1)
    (full.square().sum()).backward()
    torch.testing.assert_close(fast, full, rtol=1e-5, atol=1e-5)
    for a, b in zip(grads_fast, [p.grad for p in m.q.parameters()], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    assert grads_fast[-2].abs().sum(1).count_nonzero() <= 64  # only chosen rows move


def test_dqn_target_max_over_valid_joint_actions_equals_the_full_masked_output():
    tc = paper_config("3A-12T-10x6", "dqn", seed=1)
    cfg = get_config(tc.config)
    m = make(tc)
    rng = np.random.default_rng(0)
    # rows from none valid through one per agent to all 3,375 valid, both sides of DENSE_ROW_AT
    density = rng.choice([0.0, 0.05, 0.2, 0.4, 1.0], size=(96, 1, 1))
    masks = torch.from_numpy(rng.random((96, cfg.agents, cfg.num_actions)) < density)
    masks[:8] = False
    masks[8:16, :, 0] = True  # one valid joint action
    counts = masks.sum(-1).prod(-1)
    assert (counts > DENSE_ROW_AT).sum() >= 10 and ((counts > 1) & (counts <= DENSE_ROW_AT)).any()
    obs = torch.from_numpy(rng.random((96, cfg.obs_dim), dtype=np.float32) * 4)
    with torch.no_grad():
        want = m.q_target(obs).masked_fill(~joint_mask(masks), -1e9).max(-1).values
        got = valid_max(m.q_target, obs, masks)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert (got[:8] == -1e9).all()


def test_shared_agent_net_on_large_states_equals_the_concatenated_input_and_its_gradient():
    net = SharedAgentQ(SPLIT_FIRST_LAYER_AT + 52, 5, 28, 64)
    obs = torch.rand(32, SPLIT_FIRST_LAYER_AT + 52, generator=torch.Generator().manual_seed(0))
    fast = net(obs)  # the split first layer
    fast.square().sum().backward()
    grads_fast = [p.grad.clone() for p in net.parameters()]
    net.zero_grad()
    x = torch.cat([obs.unsqueeze(1).expand(32, 5, obs.shape[1]),
                   torch.eye(5).unsqueeze(0).expand(32, 5, 5)], dim=-1)
    ref = net.net(x)
    ref.square().sum().backward()
    torch.testing.assert_close(fast, ref, rtol=1e-5, atol=1e-5)
    for a, b in zip(grads_fast, [p.grad for p in net.parameters()], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    assert set(net.state_dict()) == {"ids"} | {f"net.{i}.{w}" for i in (0, 2, 4)
                                               for w in ("weight", "bias")}


def test_lambda_returns_match_a_hand_computation():
    # one env, one agent, 3 steps; episode ends (terminal) after step 1, then a new one starts
    r = np.array([[1.0], [2.0], [4.0]])
    done = np.array([[False], [True], [False]])
    boot = np.zeros((3, 1, 1))
    nxt = np.array([[[10.0]], [[99.0]], [[8.0]]])  # Q(s1,a1), (unused), Q(s3,a3)
    g = lambda_returns(r, done, boot, nxt, gamma=0.5, lam=0.8)
    assert g[2, 0, 0] == pytest.approx(4 + 0.5 * 8)
    assert g[1, 0, 0] == pytest.approx(2.0)
    assert g[0, 0, 0] == pytest.approx(1 + 0.5 * (0.2 * 10 + 0.8 * 2.0))


def test_masked_softmax_puts_no_mass_off_the_mask():
    logits = torch.tensor([[[5.0, 0.0, 1.0, 2.0]]])
    mask = torch.tensor([[[False, True, True, False]]])
    for eps in (0.0, 0.3):
        p = masked_probs(logits, mask, eps)
        assert p[0, 0, 0] == 0 and p[0, 0, 3] == 0 and p.sum().item() == pytest.approx(1.0)
    assert masked_probs(logits, mask, 0.3)[0, 0, 1] > 0.15  # the uniform share


def test_qtran_losses_vanish_when_the_factorisation_holds():
    tc = paper_config("3A-6T-5x3", "qtran")
    m = make(tc)
    batch = Replay(8, 33, 3, 9)
    env = StatVecEnv(get_config("3A-6T-5x3"), 8, seed=1)
    obs, masks = env.reset()
    acts = env.random_valid_actions(np.random.default_rng(0))
    nobs, nmasks, rew, info = env.step(acts)
    batch.add(obs, masks, acts, rew, nobs, nmasks, info.terminated.astype(np.float32))
    b = batch.sample(8, np.random.default_rng(0))
    loss = m.loss(b, 0.99)
    assert torch.isfinite(loss) and loss.item() > 0
    loss.backward()  # every network gets gradients
    assert all(p.grad is not None for net in m.networks().values() for p in net.parameters())


@pytest.mark.parametrize("algo", ["qmix", "dqn", "coma"])
def test_checkpoint_round_trip_and_bad_files(tmp_path, algo):
    tc = paper_config("3A-6T-5x3", algo, total_steps=600, eval_every=600, learning_starts=100,
                      num_envs=16, eval_episodes=2)
    method = make(tc)
    train(tc, method)
    path = tmp_path / "p.pt"
    save_checkpoint(path, tc, method)
    tc2, loaded = load_checkpoint(path)
    assert tc2 == tc
    cfg = get_config("3A-6T-5x3")
    assert evaluate(loaded, cfg, 3, 10) == evaluate(method, cfg, 3, 10)
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(CheckpointError, match="is corrupt or not a checkpoint"):
        load_checkpoint(path)
    torch.save({"format": "something-else"}, path)
    with pytest.raises(CheckpointError, match="not a coordbench STAT policy"):
        load_checkpoint(path)
    with pytest.raises(CheckpointError, match="does not exist"):
        load_checkpoint(tmp_path / "missing.pt")


def test_masked_argmax_never_picks_an_invalid_action():
    q = torch.tensor([[[5.0, 1.0, 0.0, 9.0]]])
    mask = torch.tensor([[[False, True, True, False]]])
    assert masked_argmax(q, mask).item() == 1


def test_replay_wraps_and_samples():
    buf = Replay(5, 3, 2, 4)
    for k in range(3):
        buf.add(np.full((2, 3), k, np.float32), np.ones((2, 2, 4), bool),
                np.zeros((2, 2), np.int64), np.full(2, k, np.float32),
                np.zeros((2, 3), np.float32), np.ones((2, 2, 4), bool), np.zeros(2, np.float32))
    assert len(buf) == 5 and buf.full
    assert buf.rewards.tolist() == [2.0, 0.0, 1.0, 1.0, 2.0]  # the 6th transition wrapped
    batch = buf.sample(7, np.random.default_rng(0))
    assert batch["obs"].shape == (7, 3) and set(batch["rewards"].tolist()) <= {0.0, 1.0, 2.0}


def random_returns(cfg, seeds, rollouts: int = 1):
    """Per-layout return of random valid play, averaged over `rollouts` rollouts."""
    out = []
    for k in range(rollouts):
        env = StatVecEnv(cfg, len(seeds), auto_reset=False, compute_obs=False)
        env.reset(np.stack([paper_layout(cfg, s) for s in seeds]))
        rng = np.random.default_rng(1 + k)
        total = np.zeros(len(seeds))
        while env.active.any():
            total += env.step(env.random_valid_actions(rng))[2]
        out.append(total)
    return np.mean(out, axis=0)


def test_qmix_learns_to_beat_random_valid_play():
    # 3A-12T-10x6: random valid play sits 24 points below the Hungarian allocator there (3 on
    # 3A-6T-5x3, where a short-trained learner's edge is within float-rounding differences
    # between CPUs); compared layout by layout against 8 random rollouts per layout, on 300
    # layouts because a 200k-step learner's edge is 2-5 points, training seed by training seed
    from scipy import stats

    cfg = get_config("3A-12T-10x6")
    tc = paper_config("3A-12T-10x6", "qmix", total_steps=200_000, eval_every=100_000, utd=8.0)
    method = make(tc)
    train(tc, method)
    seeds = list(range(200, 500))
    env = StatVecEnv(cfg, len(seeds), auto_reset=False)
    obs, masks = env.reset(np.stack([paper_layout(cfg, s) for s in seeds]))
    learned = np.zeros(len(seeds))
    while env.active.any():
        with torch.no_grad():
            act = method.greedy(torch.from_numpy(obs), torch.from_numpy(masks)).numpy()
        obs, masks, r, _ = env.step(act)
        learned += r
    rand = random_returns(cfg, seeds, rollouts=8)
    paired = stats.ttest_rel(learned, rand)
    assert learned.mean() - rand.mean() > 1.0 and paired.pvalue < 0.01, (
        learned.mean(), rand.mean(), paired)
    assert evaluate(method, cfg, 0, 5)["return"] > 480


def test_train_cli_json_and_resume(tmp_path):
    args = ["stat", "train", "--config", "3A-6T-5x3", "--algo", "vdn", "--steps", "2000",
            "--seeds", "0-1", "--num-envs", "16", "--eval-every", "1000", "--workers", "1",
            "--out", str(tmp_path), "--json"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout.strip().splitlines()[-1])
    assert set(payload["final_return"]) == {"mean", "ci95", "n", "lo", "hi"}
    assert payload["final_return"]["n"] == 2 and "conflict_rate" in payload
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["logs", "manifest.json", "report.html", "report.md", "results.json",
                     "vdn_3A-6T-5x3_seed0.csv", "vdn_3A-6T-5x3_seed0.json",
                     "vdn_3A-6T-5x3_seed0.pt", "vdn_3A-6T-5x3_seed1.csv",
                     "vdn_3A-6T-5x3_seed1.json", "vdn_3A-6T-5x3_seed1.pt"]
    # the live logs (--log csv, the default): one folder per seed
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == [
        "vdn_3A-6T-5x3_seed0", "vdn_3A-6T-5x3_seed1"]
    # the learning log: one row per evaluation, the curve's numbers with its timing
    result = json.loads((tmp_path / "vdn_3A-6T-5x3_seed0.json").read_text())
    log = (tmp_path / "vdn_3A-6T-5x3_seed0.csv").read_text().splitlines()
    head = log[0].split(",")
    assert head[:4] == ["step", "wall_s", "steps_per_s", "return"]
    assert len(log) == len(result["curve"]) + 1
    last = dict(zip(head, log[-1].split(","), strict=True))
    assert float(last["return"]) == result["final_return"] and float(last["wall_s"]) > 0
    assert "<svg" in (tmp_path / "report.html").read_text()  # learning curves
    again = CliRunner().invoke(app, args)  # resumed: nothing retrained, same numbers
    assert json.loads(again.stdout.strip().splitlines()[-1]) == payload


def test_training_progress_lines_follow_the_live_log(tmp_path):
    from coordbench.learn.methods import train_configs
    from coordbench.learn.sweep import _Progress

    tc = train_configs("3A-6T-5x3", "vdn", [3], steps=5000)[0]
    part = tmp_path / "run.csv.part"
    said: list[str] = []
    watch = _Progress(said.append, [(tc, part)])
    watch.check()  # no log yet: nothing to say
    part.write_text("step,wall_s,steps_per_s,return\n2000,1.0,2000.0,211.5\n")
    watch.check()
    watch.check()  # unchanged: said once
    with part.open("a") as f:
        f.write("4000,2.0,20")  # a row still being written is not read
    watch.check()
    assert said == ["vdn 3A-6T-5x3 seed 3: 2,000/5,000 steps, eval return 211.50, "
                    "2,000 steps/s"]


def test_pair_network_is_equivariant_under_task_permutations():
    from coordbench.learn.pair import PairAgentQ

    torch.manual_seed(0)
    cfg = get_config("5A-12T-10x6")
    n, m = cfg.agents, cfg.tasks
    net = PairAgentQ(n, m, 32)
    env = StatVecEnv(cfg, 4, seed=2)
    obs, _ = env.reset()
    env.step(env.random_valid_actions(np.random.default_rng(0)))
    obs = torch.from_numpy(env.obs.copy())
    perm = torch.randperm(m)
    d = obs[:, :n * m].view(4, n, m)[:, :, perm].reshape(4, -1)
    rest = obs[:, n * m + n:].view(4, 2, m)[:, :, perm].reshape(4, -1)
    permuted = torch.cat([d, obs[:, n * m:n * m + n], rest], dim=1)
    q, qp = net(obs), net(permuted)
    assert torch.allclose(qp[:, :, 3:], q[:, :, 3:][:, :, perm], atol=1e-5)
    assert torch.allclose(qp[:, :, :3], q[:, :, :3], atol=1e-5)


def test_pair_architecture_trains_with_every_per_agent_method():
    for algo in ("vdn", "qmix", "qtran", "iql", "coma"):
        tc = paper_config("5A-12T-10x6", algo, total_steps=1_000, eval_every=1_000,
                          learning_starts=200, num_envs=16, eval_episodes=2,
                          extra={"arch": "pair"})
        res = train(tc)
        assert res["final"]["success"] == 1.0 and res["updates"] > 0
    with pytest.raises(ConfigError, match="unknown --arch 'gnn'"):
        make(paper_config("3A-6T-5x3", "vdn", extra={"arch": "gnn"}))


def test_train_lr_and_eps_anneal_steps_are_recorded_and_guard_resume(tmp_path):
    """The paper's grid varies the learning rate and the epsilon decay (its Appendix D):
    both are options, recorded in each seed's result, used by the learner, and a rerun with
    other settings into the same directory is refused in one line, not mixed."""
    from coordbench.errors import ConfigError
    from coordbench.learn.core import TrainConfig, epsilon

    args = ["stat", "train", "--config", "3A-6T-5x3", "--algo", "iql", "--steps", "512",
            "--seeds", "0", "--num-envs", "8", "--eval-every", "256", "--eval-episodes", "2",
            "--executor", "local", "--workers", "1", "--out", str(tmp_path), "--json"]
    res = CliRunner().invoke(app, [*args, "--lr", "0.0005", "--eps-anneal-steps", "128"])
    assert res.exit_code == 0, res.output
    config = json.loads((tmp_path / "iql_3A-6T-5x3_seed0.json").read_text())["config"]
    assert config["lr"] == 0.0005 and config["eps_frac"] == 128 / 512
    tc = TrainConfig(**config)
    assert epsilon(tc, 0) == tc.eps_start
    assert epsilon(tc, 128) == pytest.approx(tc.eps_end) == epsilon(tc, 400)
    assert epsilon(tc, 64) == pytest.approx((tc.eps_start + tc.eps_end) / 2)
    again = CliRunner().invoke(app, [*args, "--lr", "0.0005", "--eps-anneal-steps", "128"])
    assert again.exit_code == 0, again.output  # same settings: resumed
    other = CliRunner().invoke(app, [*args, "--lr", "0.001", "--eps-anneal-steps", "128"])
    assert isinstance(other.exception, ConfigError)
    assert "lr=0.0005" in str(other.exception) and "\n" not in str(other.exception)
    for bad in (["--lr", "0"], ["--lr", "-1"], ["--eps-anneal-steps", "0"]):
        res = CliRunner().invoke(app, [*args, *bad])
        assert isinstance(res.exception, ConfigError), bad
    # the on-policy PPO methods sample from their policy: an epsilon setting would be ignored
    for algo in ("mappo", "ippo"):
        res = CliRunner().invoke(app, [*args[:5], algo, *args[6:], "--eps-anneal-steps", "128"])
        assert isinstance(res.exception, ConfigError), algo
        assert "does not use" in str(res.exception) and "\n" not in str(res.exception)
    assert not list(tmp_path.glob("*ppo*"))  # refused before anything was written


def test_pair_network_scores_any_agent_rows_as_the_full_forward():
    from coordbench.learn.pair import PairAgentQ

    torch.manual_seed(1)
    cfg = get_config("9A-25T-50x30")
    net = PairAgentQ(cfg.agents, cfg.tasks, 32)
    env = StatVecEnv(cfg, 6, seed=4)
    env.reset()
    rng = np.random.default_rng(4)
    for _ in range(30):
        env.step(env.random_valid_actions(rng))
    obs = torch.from_numpy(env.obs.copy())
    with torch.no_grad():
        full = net(obs)
        b = torch.tensor([5, 0, 0, 3, 5, 2])
        i = torch.tensor([8, 0, 4, 7, 8, 1])  # any order, repeats allowed
        # equal up to the rounding of matrix products over another number of rows
        torch.testing.assert_close(net(obs, (b, i)), full[b, i], rtol=1e-6, atol=1e-7)
        every = (torch.arange(6).repeat_interleave(9), torch.arange(9).repeat(6))
        torch.testing.assert_close(net(obs, every).view(6, 9, -1), full, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("algo", ["vdn", "qmix", "iql", "qtran"])
def test_one_update_moves_the_agent_network(algo):
    """Every off-policy loss trains the per-agent network, and the flat-parameter Adam moves
    its parameters (views of one flat tensor) and leaves the target network alone."""
    from coordbench.learn.core import FlatAdam, Replay

    tc = paper_config("3A-6T-5x3", algo)
    cfg = get_config(tc.config)
    method = make(tc)
    env = StatVecEnv(cfg, 16, seed=1)
    obs, masks = env.reset()
    rng = np.random.default_rng(0)
    buf = Replay(1_000, cfg.obs_dim, cfg.agents, cfg.num_actions)
    for _ in range(20):
        a = env.random_valid_actions(rng)
        nobs, nmasks, r, info = env.step(a)
        buf.add(obs, masks, a, r, nobs, nmasks, info.terminated.astype(np.float32))
        obs, masks = nobs.copy(), nmasks.copy()
    opt = FlatAdam(method.parameters(), 1e-3)
    before = {k: v.detach().clone() for k, v in method.q.named_parameters()}
    opt.zero_grad()
    method.loss(buf.sample(64, rng), 0.99).backward()
    first = method.q.net[0].weight if hasattr(method.q, "net") else None
    assert first is not None and first.grad.abs().sum() > 0
    opt.clip_grad_norm(10.0)
    opt.step()
    after = dict(method.q.named_parameters())
    assert all(not torch.equal(before[k], after[k]) for k in before)
    target = method.q_target.state_dict()
    assert all(torch.equal(before[k], target[k]) for k in before)  # the target waits


def test_undefined_diagnostics_are_null_in_result_files_and_na_in_tables(tmp_path):
    """With one task no step has a decision, so conflicts per decision is undefined: the
    evaluation says so without a numpy warning, the result file stays strict JSON (null, no
    NaN token), it reads back as NaN, and the tables print n/a."""
    import math
    import warnings

    from coordbench.learn.result_file import parse_result
    from coordbench.learn.sweep import read_result

    args = ["stat", "train", "--config", "2A-1T-1x1", "--algo", "iql", "--steps", "256",
            "--seeds", "0", "--num-envs", "8", "--eval-every", "128", "--eval-episodes", "2",
            "--executor", "local", "--workers", "1", "--out", str(tmp_path), "--json"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    path = tmp_path / "iql_2A-1T-1x1_seed0.json"

    def no_constants(name):
        raise AssertionError(f"non-JSON token {name} in {path.name}")

    raw = json.loads(path.read_text(), parse_constant=no_constants)
    assert raw["final"]["conflicts_per_decision"] is None
    assert all(row["conflicts_per_decision"] is None for row in raw["curve"])
    assert raw["final"]["success"] == 1.0  # defined metrics are untouched
    back = read_result(path)
    assert math.isnan(back["final"]["conflicts_per_decision"])
    assert math.isnan(back["curve"][0]["conflicts_per_decision"])
    # files from before, with NaN tokens, still read
    old = parse_result('{"final_return": 1.0, "final": {"x": NaN}, "curve": [{"x": NaN}]}')
    assert math.isnan(old["final"]["x"]) and math.isnan(old["curve"][0]["x"])
    table = CliRunner().invoke(app, ["stat", "table", str(tmp_path)])
    assert table.exit_code == 0, table.output
    diversity = table.output.split("assignment diversity")[1].split("###")[0]
    assert "| IQL | n/a |" in diversity and "nan" not in table.output
