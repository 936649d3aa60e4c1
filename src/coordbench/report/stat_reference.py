"""Returns of scripted policies measured on the released STAT environment (paper eval layouts).

Each entry is (mean, 95% CI half-width) over the 100 layouts seed s*1000+i, s = 0..4,
i = 0..19 (random play: 2 rollouts per layout). Source: measurements of the paper's public code,
summarized in coordbench's docs/stat.md; coordbench's own runs are compared against them.
"""

from __future__ import annotations

RELEASED_ENV_RETURNS: dict[str, dict[str, tuple[float, float]]] = {
    "3A-6T-5x3": {"random": (212.8, 0.4), "greedy": (215.7, 0.5), "hungarian": (215.8, 0.5)},
    "3A-6T-10x6": {"random": (196.6, 0.9), "greedy": (200.9, 0.9), "hungarian": (201.1, 0.9)},
    "3A-12T-10x6": {"random": (497.3, 1.5), "greedy": (521.1, 0.9), "hungarian": (521.5, 0.9)},
    "5A-12T-10x6": {"random": (498.2, 1.4), "greedy": (512.1, 1.2), "hungarian": (512.8, 1.2)},
    "5A-25T-25x15": {"random": (1254.0, 5.6), "greedy": (1440.8, 3.9),
                     "hungarian": (1443.1, 3.8)},
    "5A-25T-50x30": {"random": (840.7, 10.7), "greedy": (1222.5, 7.5),
                     "hungarian": (1225.1, 7.4)},
    "5A-50T-50x30": {"random": (2658.6, 25.0), "greedy": (4276.0, 11.2),
                     "hungarian": (4280.0, 10.4)},
    "5A-100T-50x30": {"random": (6016.8, 79.7), "greedy": (14573.0, 33.5),
                      "hungarian": (14581.2, 32.4)},
    "9A-25T-50x30": {"random": (903.1, 10.8), "greedy": (1088.3, 8.5),
                     "hungarian": (1089.9, 8.3)},
}

# Best published learned final return per configuration (paper Table 5) and its method.
BEST_LEARNED_FINAL: dict[str, tuple[float, str]] = {
    "3A-6T-5x3": (215.06, "QMIX"),
    "3A-6T-10x6": (199.94, "DQN"),
    "3A-12T-10x6": (504.20, "DQN"),
    "5A-12T-10x6": (503.68, "FDQN"),
    "5A-25T-25x15": (1266.00, "VDN"),
    "5A-25T-50x30": (866.90, "VDN"),
    "5A-50T-50x30": (2697.84, "FDQN"),
    "5A-100T-50x30": (6144.00, "QTRAN"),
    "9A-25T-50x30": (909.51, "FDQN"),
}
