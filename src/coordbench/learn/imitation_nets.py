"""The networks of the physical suite's imitation baselines (`imitation.py` trains them):
an observation encoder and the heads of bc / joint (MLP), act (ACT-style CVAE transformer)
and dp (Diffusion-Policy-style denoiser). Each reads its `PolicyConfig` as `cfg`."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn


class Encoder(nn.Module):
    """Observation -> feature (state: normalised MLP input; image: small conv net + proprio)."""

    def __init__(self, cfg: Any, state_dim: int, channels: int = 0) -> None:
        super().__init__()
        self.image = cfg.obs == "image"
        h = cfg.hidden
        self.register_buffer("mean", torch.zeros(state_dim))
        self.register_buffer("std", torch.ones(state_dim))
        if self.image:
            self.conv = nn.Sequential(
                nn.Conv2d(channels, 16, 5, stride=2, padding=2), nn.ReLU(),
                nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
                nn.Conv2d(32, 32, 3, stride=2, padding=1), nn.ReLU(),
                nn.AdaptiveAvgPool2d(4), nn.Flatten())
            self.proj = nn.Linear(32 * 16 + state_dim, h)
        else:
            self.proj = nn.Linear(state_dim, h)
        self.out = nn.Sequential(nn.ReLU(), nn.Linear(h, h), nn.ReLU())

    def forward(self, state: torch.Tensor, img: torch.Tensor | None = None) -> torch.Tensor:
        """Return (B, hidden)."""
        x = ((state - self.mean) / self.std).clamp(-10, 10)
        if self.image:
            x = torch.cat([self.conv(img.float() / 255.0), x], dim=1)
        return self.out(self.proj(x))


class BCNet(nn.Module):
    """MLP head: feature -> chunk x 8."""

    def __init__(self, cfg: Any, enc: Encoder) -> None:
        super().__init__()
        self.cfg, self.enc = cfg, enc
        self.head = nn.Linear(cfg.hidden, cfg.chunk * cfg.action_width)

    def predict(self, state, img=None) -> torch.Tensor:
        """Return normalised actions (B, chunk, action width)."""
        return self.head(self.enc(state, img)).view(-1, self.cfg.chunk, self.cfg.action_width)

    def loss(self, state, img, target) -> torch.Tensor:
        """Return the mean squared error to the normalised target chunk."""
        return nn.functional.mse_loss(self.predict(state, img), target)


class ACTNet(nn.Module):
    """ACT-style CVAE with a transformer decoder over learned per-step queries."""

    latent = 32

    def __init__(self, cfg: Any, enc: Encoder) -> None:
        super().__init__()
        self.cfg, self.enc = cfg, enc
        d = cfg.hidden
        self.queries = nn.Parameter(torch.randn(cfg.chunk, d) * 0.02)
        self.z_proj = nn.Linear(self.latent, d)
        pre = cfg.pre_norm
        self.decoder = nn.TransformerDecoder(
            nn.TransformerDecoderLayer(d, 4, 2 * d, dropout=0.0, batch_first=True,
                                       norm_first=pre), 2,
            norm=nn.LayerNorm(d) if pre else None)
        self.head = nn.Linear(d, cfg.action_dim)
        self.act_proj = nn.Linear(cfg.action_dim, d)
        self.posterior = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(d, 4, 2 * d, dropout=0.0, batch_first=True,
                                       norm_first=pre), 1,
            norm=nn.LayerNorm(d) if pre else None, enable_nested_tensor=False)
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        self.to_latent = nn.Linear(d, 2 * self.latent)

    def _decode(self, feat: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        memory = torch.stack([feat, self.z_proj(z)], dim=1)
        q = self.queries.unsqueeze(0).expand(len(feat), -1, -1)
        return self.head(self.decoder(q, memory))

    def predict(self, state, img=None) -> torch.Tensor:
        """Return normalised actions (B, chunk, 8) with the latent at its prior mean."""
        feat = self.enc(state, img)
        return self._decode(feat, torch.zeros(len(feat), self.latent))

    def loss(self, state, img, target) -> torch.Tensor:
        """Return L1 reconstruction + kl_weight x KL(q(z | obs, chunk) || N(0, I)) (the KL
        summed over the latent, averaged over the batch)."""
        feat = self.enc(state, img)
        tokens = torch.cat([self.cls.expand(len(feat), -1, -1), feat.unsqueeze(1),
                            self.act_proj(target)], dim=1)
        stats = self.to_latent(self.posterior(tokens)[:, 0])
        mu, logvar = stats.chunk(2, dim=1)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        recon = nn.functional.l1_loss(self._decode(feat, z), target)
        kl = -0.5 * torch.mean(torch.sum(1 + logvar - mu.pow(2) - logvar.exp(), dim=1))
        return recon + self.cfg.kl_weight * kl


class DPNet(nn.Module):
    """Diffusion-Policy-style denoiser over action chunks (MLP with timestep embedding)."""

    train_steps = 50
    sample_steps = 10

    def __init__(self, cfg: Any, enc: Encoder) -> None:
        super().__init__()
        self.cfg, self.enc = cfg, enc
        d, flat = cfg.hidden, cfg.chunk * cfg.action_dim
        self.net = nn.Sequential(nn.Linear(flat + d + 32, 2 * d), nn.Mish(),
                                 nn.Linear(2 * d, 2 * d), nn.Mish(), nn.Linear(2 * d, flat))
        s = torch.arange(self.train_steps + 1, dtype=torch.float64) / self.train_steps
        f = torch.cos((s + 0.008) / 1.008 * math.pi / 2) ** 2
        self.register_buffer("abar", (f[1:] / f[0]).clamp(1e-4, 0.9999).float())

    def _embed(self, t: torch.Tensor) -> torch.Tensor:
        freqs = torch.exp(torch.arange(16) * (-math.log(1000.0) / 16))
        ang = t.float().unsqueeze(1) * freqs.unsqueeze(0)
        return torch.cat([ang.sin(), ang.cos()], dim=1)

    def _eps(self, x: torch.Tensor, t: torch.Tensor, feat: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([x.flatten(1), feat, self._embed(t)], dim=1)).view_as(x)

    def loss(self, state, img, target) -> torch.Tensor:
        """Return the denoiser's error at a random diffusion step (against the clean chunk
        or the noise, by `dp_target`)."""
        feat = self.enc(state, img)
        t = torch.randint(0, self.train_steps, (len(target),))
        ab = self.abar[t].view(-1, 1, 1)
        noise = torch.randn_like(target)
        x = ab.sqrt() * target + (1 - ab).sqrt() * noise
        want = target if self.cfg.dp_target == "sample" else noise
        return nn.functional.mse_loss(self._eps(x, t, feat), want)

    def predict(self, state, img=None) -> torch.Tensor:
        """Return normalised actions (B, chunk, 8) by DDIM sampling (eta 0)."""
        feat = self.enc(state, img)
        x = torch.randn(len(feat), self.cfg.chunk, self.cfg.action_dim)
        ts = torch.linspace(self.train_steps - 1, 0, self.sample_steps).long()
        for k, t in enumerate(ts):
            ab = self.abar[t]
            out = self._eps(x, t.repeat(len(x)), feat)
            if self.cfg.dp_target == "sample":
                x0 = out.clamp(-1.5, 1.5)
                eps = (x - ab.sqrt() * x0) / (1 - ab).sqrt()
            else:
                eps = out
                x0 = ((x - (1 - ab).sqrt() * eps) / ab.sqrt()).clamp(-1.5, 1.5)
            ab_next = self.abar[ts[k + 1]] if k + 1 < len(ts) else torch.tensor(1.0)
            x = ab_next.sqrt() * x0 + (1 - ab_next).sqrt() * eps
        return x


NETS = {"bc": BCNet, "act": ACTNet, "dp": DPNet, "joint": BCNet}


def build(cfg: Any, state_dim: int, channels: int) -> nn.Module:
    """Return an untrained network for `cfg`."""
    return NETS[cfg.algo](cfg, Encoder(cfg, state_dim, channels))
