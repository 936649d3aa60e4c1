"""MAPPO and IPPO: masked policies, GAE, the training loop, learning, checkpoints."""

import math

import numpy as np
import pytest
import torch

from coordbench.agents.stat.scripted import get_policy
from coordbench.envs.stat.config import get_config
from coordbench.envs.stat.layouts import paper_layout
from coordbench.envs.stat.vec import StatVecEnv
from coordbench.learn.coma import masked_probs
from coordbench.learn.core import evaluate, evaluate_policy
from coordbench.learn.methods import (
    checkpoint_bytes,
    load_checkpoint,
    make,
    paper_config,
    train,
    train_configs,
)
from coordbench.learn.ppo import MAPPO, PPOSettings, gae, masked_log_probs


def test_masked_policy_puts_exactly_zero_off_the_mask_and_finite_log_probs_on_it():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(64, 3, 9, generator=g) * 5
    masks = torch.rand(64, 3, 9, generator=g) < 0.4
    masks[:, :, 0] |= ~masks.any(-1)  # every agent has a valid action, as in STAT
    logits[~masks] = 1e4  # invalid actions the network likes best still get nothing
    probs = masked_probs(logits, masks)
    assert (probs[~masks] == 0).all()
    torch.testing.assert_close(probs.sum(-1), torch.ones(64, 3))
    logp = masked_log_probs(logits, masks)
    assert torch.isfinite(logp[masks]).all()
    torch.testing.assert_close(logp.exp()[masks], probs[masks])
    draws = torch.multinomial(probs.view(-1, 9), 50, replacement=True, generator=g).view(64, 3, 50)
    assert masks.gather(-1, draws).all()
    entropy = -(probs * logp).sum(-1)
    assert torch.isfinite(entropy).all() and (entropy >= -1e-6).all()
    forced = masks.sum(-1) == 1
    assert forced.any() and entropy[forced].abs().max() < 1e-6  # a forced step: no choice


def test_gae_matches_a_hand_computation_with_a_time_out_and_a_terminal():
    # env 0: step 0 goes on, step 1 times out (bootstraps from V(final) = 7), step 2 is terminal
    # env 1: nothing ends (bootstraps from the value after the rollout, 2)
    # env 2: step 0 both completes every task and hits the limit: terminal, no bootstrap
    rewards = np.array([[1.0, 0.0, 1.0], [2.0, 0.0, 0.0], [4.0, 0.0, 0.0]])
    values = np.array([[10.0, 1.0, 5.0], [20.0, 1.0, 0.0], [30.0, 1.0, 0.0]])[..., None]
    last = np.array([[99.0], [2.0], [0.0]])
    boot = np.zeros((3, 3, 1))
    boot[1, 0], boot[0, 2] = 7.0, 100.0
    term = np.array([[False, False, True], [False, False, False], [True, False, False]])
    trunc = np.array([[False, False, True], [True, False, False], [False, False, False]])
    adv, ret = gae(rewards, values, last, boot, term, trunc, gamma=0.5, lam=0.8)
    a2 = 4 - 30  # terminal: no bootstrap
    a1 = 2 + 0.5 * 7 - 20  # time-out: bootstraps, and the chain stops
    a0 = (1 + 0.5 * 20 - 10) + 0.5 * 0.8 * a1
    np.testing.assert_allclose(adv[:, 0, 0], [a0, a1, a2])
    d2, d1 = 0.5 * 2 - 1, 0.5 * 1 - 1
    np.testing.assert_allclose(adv[:, 1, 0], [d1 + 0.4 * (d1 + 0.4 * d2), d1 + 0.4 * d2, d2])
    assert adv[0, 2, 0] == pytest.approx(1 - 5)
    np.testing.assert_allclose(ret, adv + values)


@pytest.mark.parametrize("algo", ["mappo", "ippo"])
def test_short_run_gives_a_finite_curve_and_valid_greedy_actions(algo):
    tc = train_configs("3A-6T-5x3", algo, [0], steps=2_048, eval_every=1_024,
                       eval_episodes=3)[0]
    tc.extra.update({"rollout": 8, "epochs": 2})
    assert (tc.num_envs, tc.lr, PPOSettings.from_extra(tc.extra).minibatches) == (32, 1e-3, 4)
    method = make(tc)
    res = train(tc, method)
    assert res["updates"] == 2_048 // (8 * 32) * 2 * 4  # iterations x epochs x minibatches
    assert [c["step"] for c in res["curve"]] == [0, 1_024, 2_048]
    assert all(math.isfinite(c["return"]) for c in res["curve"])
    cfg = get_config(tc.config)
    env = StatVecEnv(cfg, 8, auto_reset=False)
    obs, masks = env.reset(np.stack([paper_layout(cfg, s) for s in range(8)]))
    while env.active.any():
        with torch.no_grad():
            act = method.greedy(torch.from_numpy(obs), torch.from_numpy(masks)).numpy()
        rows = env.active.copy()
        assert np.take_along_axis(masks, act[..., None], -1)[rows].all()
        obs, masks, _, _ = env.step(act)
    critic = method.critic
    values = critic(torch.from_numpy(obs))
    assert values.shape == (8, cfg.agents) and critic.ret_count > 0
    if isinstance(method, MAPPO):  # one team value for every agent
        assert (values == values[:, :1]).all()


@pytest.mark.parametrize("algo", ["mappo", "ippo"])
def test_ppo_learns_to_beat_random_valid_play(algo):
    # On these 50 layouts random valid play scores 197.11 (mean of 8 rollouts; one rollout:
    # 196.16-198.07) and the Hungarian allocator 201.86. Over training seeds 0-5 at 80k steps
    # the greedy policy's edge over that mean was 1.82-3.66 (MAPPO) and 2.03-3.36 (IPPO).
    cfg = get_config("3A-6T-10x6")
    tc = train_configs(cfg.name, algo, [0], steps=80_000, eval_every=80_000,
                       eval_episodes=5)[0]
    method = make(tc)
    train(tc, method)
    random = get_policy("random")
    baseline = np.mean([evaluate_policy(lambda env, g=np.random.default_rng(k): random(env, g),
                                        cfg, 7, 50)["return"] for k in range(8)])
    learned = evaluate(method, cfg, 7, 50)["return"]
    assert learned > baseline + 1.0, (learned, baseline)


@pytest.mark.parametrize("algo", ["mappo", "ippo"])
def test_checkpoint_round_trip(tmp_path, algo):
    tc = paper_config("3A-6T-5x3", algo, total_steps=1_024, eval_every=1_024, num_envs=16,
                      eval_episodes=2, extra={"rollout": 16, "epochs": 1})
    method = make(tc)
    train(tc, method)
    path = tmp_path / "p.pt"
    path.write_bytes(checkpoint_bytes(tc, method))
    tc2, loaded = load_checkpoint(path)
    assert tc2 == tc and set(loaded.networks()) == {"actor", "critic"}
    cfg = get_config(tc.config)
    assert evaluate(loaded, cfg, 3, 10) == evaluate(method, cfg, 3, 10)
    obs = torch.from_numpy(StatVecEnv(cfg, 4, seed=5).reset()[0])
    with torch.no_grad():  # the value normaliser travels with the critic
        torch.testing.assert_close(loaded.critic.denormalize(loaded.critic(obs)),
                                   method.critic.denormalize(method.critic(obs)))
    assert loaded.critic.ret_count == method.critic.ret_count > 0


def _played_states(config: str, batch: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Return states and masks met by random valid play (many forced agents among them)."""
    cfg = get_config(config)
    env = StatVecEnv(cfg, batch, seed=seed)
    env.reset()
    rng = np.random.default_rng(seed)
    obs, masks = [], []
    for t in range(60):
        o, m, _, _ = env.step(env.random_valid_actions(rng))
        if t % 6 == 0:
            obs.append(o.copy())
            masks.append(m.copy())
    return torch.from_numpy(np.concatenate(obs)), torch.from_numpy(np.concatenate(masks))


def check_sampled(masks, draws, logp, full_logits):
    """Assert sampled actions are valid, forced ones have log-probability 0, and the others
    the masked softmax's of the full forward."""
    assert masks.gather(-1, draws.unsqueeze(-1)).all()
    forced = masks.sum(-1) == 1
    assert (logp[forced] == 0).all() and (logp[~forced] < 0).all()
    ref_logp = masked_log_probs(full_logits, masks).gather(-1, draws.unsqueeze(-1)).squeeze(-1)
    torch.testing.assert_close(logp, ref_logp, rtol=1e-5, atol=1e-5)


def loss_inputs(logp):
    """Return seeded advantages, old log-probabilities and a half-batch of state indices."""
    g = torch.Generator().manual_seed(2)
    adv = torch.randn(logp.shape, generator=g)
    old_logp = logp + 0.1 * torch.randn(logp.shape, generator=g)
    return adv, old_logp, torch.randperm(len(logp), generator=g)[: len(logp) // 2]


def reference_policy_terms(logits, masks, draws, old_logp, adv):
    """Return the policy loss and entropy as the formulation that scores every agent and
    masks the forced ones out."""
    lp = masked_log_probs(logits, masks)
    ratio = torch.exp(lp.gather(-1, draws.unsqueeze(-1)).squeeze(-1) - old_logp)
    surr = torch.min(ratio * adv, ratio.clamp(0.8, 1.2) * adv)
    c = (masks.sum(-1) > 1).float()
    ent = (-(masked_probs(logits, masks) * lp).sum(-1) * c).sum() / c.sum()
    return -(surr * c).sum() / c.sum(), ent


@pytest.mark.parametrize("arch,config", [("pair", "5A-12T-10x6"), ("pair", "9A-25T-50x30"),
                                         ("mlp", "3A-6T-5x3"), ("mlp", "5A-25T-50x30")])
def test_scoring_only_the_agents_with_a_choice_gives_the_full_forward_numbers(arch, config):
    """The on-policy learners score only the agents with a choice: the same logits, greedy
    actions, sampled log-probabilities, policy loss, entropy and gradients as scoring every
    agent and masking (the formulation written out below)."""
    from coordbench.learn.core import agent_network, choice_rows, masked_argmax, masked_greedy
    from coordbench.learn.ppo import policy_terms, sample

    torch.manual_seed(0)
    tc = paper_config(config, "mappo", extra={"arch": arch})
    cfg = get_config(config)
    net = agent_network(cfg.obs_dim, cfg.agents, cfg.num_actions, tc)
    obs, masks = _played_states(config, 16, seed=3)
    rows = choice_rows(masks)
    assert 0 < len(rows[0]) < masks.shape[0] * masks.shape[1] // 2  # most agents are forced
    with torch.no_grad():
        full = net(obs)
        torch.testing.assert_close(net(obs, rows), full[rows], rtol=1e-5, atol=1e-5)
        assert torch.equal(masked_greedy(net, obs, masks), masked_argmax(full, masks))
        draws, logp = sample(net, obs, masks, torch.Generator().manual_seed(1))
    check_sampled(masks, draws, logp, full)
    adv, old_logp, idx = loss_inputs(logp)
    pg, ent = policy_terms(net, obs, masks, draws, old_logp, adv, idx, clip=0.2)
    grads = torch.autograd.grad(pg - 0.01 * ent, list(net.parameters()))
    ref_pg, ref_ent = reference_policy_terms(net(obs[idx]), masks[idx], draws[idx],
                                             old_logp[idx], adv[idx])
    ref_grads = torch.autograd.grad(ref_pg - 0.01 * ref_ent, list(net.parameters()))
    torch.testing.assert_close(pg, ref_pg, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(ent, ref_ent, rtol=1e-5, atol=1e-6)
    for a, b in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


def test_claims_of_marks_the_tasks_lower_agents_select():
    from coordbench.envs.stat.config import MOVE, SELECT0
    from coordbench.learn.ppo import claims_of

    actions = torch.tensor([[SELECT0 + 2, MOVE, SELECT0 + 1, SELECT0 + 0]])
    assert claims_of(actions, 3)[0].tolist() == [[0, 0, 0], [0, 0, 1], [0, 0, 1], [0, 1, 1]]


@pytest.mark.parametrize("config", ["5A-25T-50x30", "9A-25T-50x30"])
def test_sequential_actor_gives_each_agent_the_lower_agents_picks(config):
    """pair-seq: agents decide in index order, each seeing what the lower-index agents picked.
    Sampled log-probabilities, greedy actions and the policy loss all equal the teacher-forced
    full forward whose claims come from the joint action itself, so what is sampled is what
    is trained."""
    from coordbench.learn.core import agent_network, choice_rows, masked_argmax
    from coordbench.learn.ppo import claims_of, policy_terms, sample

    torch.manual_seed(0)
    cfg = get_config(config)
    tc = paper_config(config, "mappo", extra={"arch": "pair-seq"})
    net = agent_network(cfg.obs_dim, cfg.agents, cfg.num_actions, tc)
    start = StatVecEnv(cfg, 8, seed=4).reset()  # every agent decides at the start
    obs, masks = _played_states(config, 16, seed=3)
    obs = torch.cat([torch.from_numpy(start[0]), obs])
    masks = torch.cat([torch.from_numpy(start[1]), masks])
    m = cfg.tasks
    with torch.no_grad():
        draws, logp = sample(net, obs, masks, torch.Generator().manual_seed(1))
        claimed = claims_of(draws, m)
        full = net(obs, None, claimed)
        rows = choice_rows(masks)
        torch.testing.assert_close(net(obs, rows, claimed[rows]), full[rows], rtol=1e-5,
                                   atol=1e-5)
        greedy = MAPPO(cfg.obs_dim, cfg.agents, cfg.num_actions, tc)
        greedy.actor = net
        g = greedy.greedy(obs, masks)
        # the sequential argmax is the fixed point: each agent's argmax given the lower picks
        assert torch.equal(g, masked_argmax(net(obs, None, claims_of(g, m)), masks))
    lower_picks = claimed[rows][rows[1] > 0]
    assert lower_picks.sum() > 0  # the claims are not all empty: the test can see them
    check_sampled(masks, draws, logp, full)
    adv, old_logp, idx = loss_inputs(logp)
    pg, ent = policy_terms(net, obs, masks, draws, old_logp, adv, idx, clip=0.2)
    ref_pg, ref_ent = reference_policy_terms(net(obs[idx], None, claimed[idx]), masks[idx],
                                             draws[idx], old_logp[idx], adv[idx])
    torch.testing.assert_close(pg, ref_pg, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(ent, ref_ent, rtol=1e-5, atol=1e-6)


def test_sequential_architecture_trains_checkpoints_and_refuses_other_methods(tmp_path):
    from coordbench.errors import ConfigError

    tc = paper_config("5A-12T-10x6", "mappo", total_steps=1_024, eval_every=1_024,
                      num_envs=16, eval_episodes=2,
                      extra={"arch": "pair-seq", "rollout": 16, "epochs": 1})
    method = make(tc)
    res = train(tc, method)
    assert res["final"]["success"] == 1.0 and res["updates"] > 0
    path = tmp_path / "seq.pt"
    path.write_bytes(checkpoint_bytes(tc, method))
    _, loaded = load_checkpoint(path)
    cfg = get_config(tc.config)
    assert loaded.actor.sequential
    assert evaluate(loaded, cfg, 3, 10) == evaluate(method, cfg, 3, 10)
    for algo in ("vdn", "qmix", "coma"):
        with pytest.raises(ConfigError, match=f"only mappo and ippo support; {algo} does not"):
            train_configs("5A-12T-10x6", algo, [0], arch="pair-seq")
        with pytest.raises(ConfigError, match="decide in index order"):
            make(paper_config("5A-12T-10x6", algo, extra={"arch": "pair-seq"}))


def test_a_richer_observation_is_labelled_trained_on_and_kept_with_its_checkpoint(tmp_path,
                                                                                   monkeypatch):
    import dataclasses

    import coordbench.learn.ppo as ppo_module
    from coordbench.errors import ConfigError
    from coordbench.learn.core import env_config, method_label
    from coordbench.learn.methods import checkpoint_policy
    from coordbench.suites.stat.suite import StatEvalSpec

    # the paper's own count is the paper's observation: no label, no extra
    assert train_configs("3A-6T-5x3", "mappo", [0], num_bins=5)[0].extra == {}
    for bad in (1, 1001):
        with pytest.raises(ConfigError, match="--num-bins must be in 2..1000"):
            train_configs("3A-6T-5x3", "mappo", [0], num_bins=bad)
    tc = train_configs("3A-6T-5x3", "mappo", [0], steps=512, eval_every=512, eval_episodes=2,
                       arch="pair-seq", num_bins=12)[0]
    tc.extra.update({"rollout": 8, "epochs": 1})
    assert method_label(tc.algo, tc.extra) == "mappo+pair-seq+bins12"
    cfg = env_config(tc)
    assert (cfg.name, cfg.num_bins) == ("3A-6T-5x3", 12)
    method = make(tc)
    # the pair network reads 12 bins: its one-hot widens from the paper's 5 to 12
    assert method.actor.embed[0].in_features == (12 + 13) + 1
    seen = []

    class RecordingEnv(StatVecEnv):
        def __init__(self, cfg, *args, **kwargs):
            seen.append(cfg.num_bins)
            super().__init__(cfg, *args, **kwargs)

    monkeypatch.setattr(ppo_module, "StatVecEnv", RecordingEnv)
    res = train(tc, method)
    assert seen == [12]  # the training env observes the run's bins, not the paper's
    assert all(math.isfinite(c["return"]) for c in res["curve"])
    # 12 bins over a width of 5 are narrower than the paper's: some observed bin exceeds 4
    env = StatVecEnv(cfg, 16, seed=1)
    env.reset()
    assert env.obs[:, :cfg.agents * cfg.tasks].max() > 4
    path = tmp_path / "bins12.pt"
    path.write_bytes(checkpoint_bytes(tc, method))
    policy = checkpoint_policy(str(path))
    assert policy.num_bins == 12
    # evaluated through the suite, the checkpoint plays on the bins it was trained on
    suite = StatEvalSpec(config="3A-6T-5x3", policy=str(path))
    assert suite.cfg().num_bins == 12
    paper_env = StatVecEnv(get_config("3A-6T-5x3"), 2)
    paper_env.reset()
    with pytest.raises(ConfigError, match="trained on 12 distance bins, not 5"):
        policy(paper_env, np.random.default_rng(0))
    rich_env = StatVecEnv(dataclasses.replace(get_config("3A-6T-5x3"), num_bins=12), 2)
    rich_env.reset()
    assert policy(rich_env, np.random.default_rng(0)).shape == (2, 3)


def test_the_observation_memory_is_labelled_read_by_the_pair_network_and_kept_in_play(
        tmp_path, monkeypatch):
    import dataclasses

    import coordbench.learn.ppo as ppo_module
    from coordbench.envs.stat.memory import ObservationMemory, memory_of, width
    from coordbench.errors import ConfigError
    from coordbench.learn.core import method_label
    from coordbench.learn.methods import checkpoint_policy

    for algo, arch in (("vdn", "pair"), ("mappo", "mlp")):
        with pytest.raises(ConfigError, match="--memory needs --arch pair or pair-seq"):
            train_configs("3A-6T-5x3", algo, [0], arch=arch, memory=True)
    tc = train_configs("3A-6T-10x6", "mappo", [0], steps=512, eval_every=512,
                       eval_episodes=2, arch="pair-seq", memory=True)[0]
    tc.extra.update({"rollout": 8, "epochs": 1})
    assert method_label(tc.algo, tc.extra) == "mappo+pair-seq+mem"
    cfg = get_config("3A-6T-10x6")
    method = make(tc)
    assert method.actor.embed[0].in_features == (5 + 13 + 2) + 1
    assert method.critic.net[0].in_features == cfg.obs_dim + width(cfg)
    observed = []

    class RecordingMemory(ObservationMemory):
        def observe(self, env):
            out = super().observe(env)
            observed.append(out.shape)
            return out

        def final_rows(self, obs_rows, idx, committed):
            out = super().final_rows(obs_rows, idx, committed)
            finals.append((out.shape, committed.any()))
            return out

    finals = []
    monkeypatch.setattr(ppo_module, "ObservationMemory", RecordingMemory)
    res = train(tc, method)
    assert len(observed) == 1 + 512 // tc.num_envs  # the reset, then every step
    assert set(observed) == {(tc.num_envs, cfg.obs_dim + width(cfg))}
    assert all(math.isfinite(c["return"]) for c in res["curve"])
    assert not finals  # no episode reaches the limit of 700
    # with a limit of 12 steps, episodes time out with picks held: their last rows, memory
    # included, bootstrap the returns
    short = dataclasses.replace(cfg, episode_limit=12)
    monkeypatch.setattr(ppo_module, "env_config", lambda _: short)
    res = train(tc, make(tc))
    assert finals and {s for s, _ in finals} <= {(k, cfg.obs_dim + width(cfg))
                                                  for k in range(1, tc.num_envs + 1)}
    assert any(held for _, held in finals)
    assert all(math.isfinite(c["return"]) for c in res["curve"])

    # the network reads the memory: changing a decision agent's shares changes its scores
    env = StatVecEnv(cfg, 8, seed=3)
    env.reset()
    x = torch.from_numpy(memory_of(env).observe(env))
    rows = (torch.zeros(1, dtype=torch.long), torch.zeros(1, dtype=torch.long))
    claimed = torch.zeros(1, cfg.tasks)
    y = x.clone()
    y[:, cfg.obs_dim:cfg.obs_dim + cfg.tasks] = torch.linspace(0, 1, cfg.tasks)
    with torch.no_grad():
        assert not torch.equal(method.actor(x, rows, claimed), method.actor(y, rows, claimed))
        # rows-only scoring agrees with the full forward on memory inputs too
        full = method.actor(y, None, torch.zeros(8, cfg.agents, cfg.tasks))
        np.testing.assert_allclose(method.actor(y, rows, claimed).numpy(), full[0, :1].numpy(),
                                   rtol=1e-5, atol=1e-5)

    # a checkpoint plays a plain env, keeping the memory itself
    path = tmp_path / "mem.pt"
    path.write_bytes(checkpoint_bytes(tc, method))
    policy = checkpoint_policy(str(path))
    play = StatVecEnv(cfg, 4, seed=5, auto_reset=False)
    play.reset()
    rng = np.random.default_rng(0)
    for _ in range(30):
        acts = policy(play, rng)
        mem = memory_of(play)
        want = method.greedy(torch.from_numpy(np.concatenate(
            [play.obs, mem.features(play.obs, play.state.target)], axis=1)),
            torch.from_numpy(play.masks)).numpy()
        np.testing.assert_array_equal(acts, want)
        play.step(acts)
    assert memory_of(play).known.any()
