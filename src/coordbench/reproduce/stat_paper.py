"""The STAT paper's published numbers (its Tables 5-14), as transcribed in coordbench's
research notes; the reproduction sets coordbench's numbers beside them.

Per-method tables list DQN, FDQN, VDN, QMIX, QTRAN, IQL in that order (None: not run).
"""

from __future__ import annotations

PAPER_METHODS = ("dqn", "fdqn", "vdn", "qmix", "qtran", "iql")

# Table 5: final return (mean; its 95% CI half-width in FINAL_RETURN_CI)
FINAL_RETURN: dict[str, tuple[float | None, ...]] = {
    "3A-6T-5x3": (215.05, 214.97, 214.59, 215.06, 212.31, 211.73),
    "3A-6T-10x6": (199.94, 199.87, 199.76, 199.61, 196.9, 195.52),
    "3A-12T-10x6": (504.2, 499.72, 499.14, 502.07, 495.87, 496.29),
    "5A-12T-10x6": (None, 503.68, 501.31, 500.11, 492.66, 487.81),
    "5A-25T-25x15": (None, 1263.87, 1266.0, 1261.98, 1248.17, 1245.52),
    "5A-25T-50x30": (None, 857.58, 866.9, 856.06, 853.16, 854.01),
    "5A-50T-50x30": (None, 2697.84, 2666.88, 2664.23, 2648.79, 2674.91),
    "5A-100T-50x30": (None, 6075.01, 5892.01, 5934.09, 6144.0, 6122.33),
    "9A-25T-50x30": (None, 909.51, 909.08, 902.58, 888.71, 872.16),
}
FINAL_RETURN_CI: dict[str, tuple[float | None, ...]] = {
    "3A-6T-5x3": (0.7, 0.7, 1.1, 0.4, 1.0, 1.4),
    "3A-6T-10x6": (1.4, 0.7, 0.8, 0.8, 1.5, 0.7),
    "3A-12T-10x6": (2.5, 2.2, 2.6, 3.7, 3.4, 1.9),
    "5A-12T-10x6": (None, 2.5, 3.2, 2.2, 1.8, 3.0),
    "5A-25T-25x15": (None, 14.2, 5.3, 8.5, 7.9, 5.4),
    "5A-25T-50x30": (None, 32.5, 26.3, 17.1, 16.9, 9.0),
    "5A-50T-50x30": (None, 19.6, 46.6, 66.7, 52.4, 35.8),
    "5A-100T-50x30": (None, 198.8, 185.1, 207.3, 268.8, 182.5),
    "9A-25T-50x30": (None, 28.6, 21.1, 23.6, 25.6, 11.6),
}
# Table 6: maximum return over training
MAX_RETURN: dict[str, tuple[float | None, ...]] = {
    "3A-6T-5x3": (215.79, 215.59, 215.32, 215.7, 213.61, 212.73),
    "3A-6T-10x6": (201.02, 200.86, 200.53, 200.62, 198.53, 196.99),
    "3A-12T-10x6": (507.05, 503.83, 502.22, 504.24, 498.92, 500.54),
    "5A-12T-10x6": (None, 505.74, 503.09, 502.72, 496.26, 493.13),
    "5A-25T-25x15": (None, 1289.77, 1288.83, 1285.16, 1271.63, 1271.69),
    "5A-25T-50x30": (None, 911.41, 906.98, 906.91, 887.67, 899.48),
    "5A-50T-50x30": (None, 2818.9, 2785.1, 2789.98, 2784.33, 2791.03),
    "5A-100T-50x30": (None, 6521.22, 6510.74, 6442.63, 6441.12, 6497.27),
    "9A-25T-50x30": (None, 941.14, 937.69, 938.9, 925.98, 911.26),
}
# Table 7-10: final conflict rate, conflicts per task, per-agent assignment diversity,
# throughput
CONFLICT_RATE: dict[str, tuple[float | None, ...]] = {
    "3A-6T-5x3": (0.021, 0.0341, 0.0329, 0.0273, 0.108, 0.1494),
    "3A-6T-10x6": (0.0114, 0.0307, 0.0356, 0.0305, 0.0719, 0.1237),
    "3A-12T-10x6": (0.0349, 0.0404, 0.0637, 0.0568, 0.0733, 0.0924),
    "5A-12T-10x6": (None, 0.0975, 0.1325, 0.1405, 0.2131, 0.2426),
    "5A-25T-25x15": (None, 0.042, 0.0567, 0.0518, 0.0773, 0.0859),
    "5A-25T-50x30": (None, 0.0132, 0.0214, 0.0223, 0.0314, 0.0412),
    "5A-50T-50x30": (None, 0.0096, 0.0189, 0.0191, 0.0253, 0.0295),
    "5A-100T-50x30": (None, 0.0048, 0.02, 0.0155, 0.0206, 0.0246),
    "9A-25T-50x30": (None, 0.0465, 0.0715, 0.0699, 0.0889, 0.1138),
}
CONFLICTS_PER_TASK: dict[str, tuple[float | None, ...]] = {
    "3A-6T-5x3": (0.0417, 0.0683, 0.0667, 0.055, 0.2367, 0.3367),
    "3A-6T-10x6": (0.0333, 0.09, 0.105, 0.09, 0.2233, 0.395),
    "3A-12T-10x6": (0.0925, 0.1108, 0.1767, 0.1542, 0.2075, 0.2608),
    "5A-12T-10x6": (None, 0.1808, 0.2458, 0.265, 0.4233, 0.4992),
    "5A-25T-25x15": (None, 0.1324, 0.178, 0.1652, 0.2504, 0.28),
    "5A-25T-50x30": (None, 0.076, 0.1216, 0.1284, 0.1812, 0.2368),
    "5A-50T-50x30": (None, 0.0504, 0.1, 0.101, 0.134, 0.1558),
    "5A-100T-50x30": (None, 0.0242, 0.0987, 0.0765, 0.1004, 0.1209),
    "9A-25T-50x30": (None, 0.1756, 0.2672, 0.2672, 0.336, 0.4408),
}
PER_AGENT_DIVERSITY: dict[str, tuple[float | None, ...]] = {
    "3A-6T-5x3": (2.275, 2.324, 1.092, 1.086, 0.906, 0.804),
    "3A-6T-10x6": (2.565, 2.328, 1.062, 1.084, 0.925, 0.735),
    "3A-12T-10x6": (1.316, 1.303, 0.913, 0.925, 0.829, 0.804),
    "5A-12T-10x6": (None, 1.461, 0.842, 0.802, 0.652, 0.526),
    "5A-25T-25x15": (None, 1.093, 0.859, 0.837, 0.732, 0.681),
    "5A-25T-50x30": (None, 1.183, 0.89, 0.855, 0.776, 0.699),
    "5A-50T-50x30": (None, 1.07, 0.886, 0.881, 0.825, 0.799),
    "5A-100T-50x30": (None, 1.036, 0.875, 0.907, 0.873, 0.851),
    "9A-25T-50x30": (None, 1.222, 0.668, 0.663, 0.554, 0.397),
}
THROUGHPUT: dict[str, tuple[float | None, ...]] = {
    "3A-6T-5x3": (0.5052, 0.5015, 0.4965, 0.4981, 0.4568, 0.4468),
    "3A-6T-10x6": (0.3467, 0.3404, 0.3399, 0.34, 0.3224, 0.313),
    "3A-12T-10x6": (0.376, 0.3643, 0.3605, 0.3693, 0.3529, 0.3545),
    "5A-12T-10x6": (None, 0.5406, 0.5398, 0.5305, 0.503, 0.4857),
    "5A-25T-25x15": (None, 0.3176, 0.3183, 0.3137, 0.3087, 0.3067),
    "5A-25T-50x30": (None, 0.1741, 0.1754, 0.1738, 0.1733, 0.1738),
    "5A-50T-50x30": (None, 0.1899, 0.189, 0.1888, 0.1886, 0.1894),
    "5A-100T-50x30": (None, 0.1982, 0.2024, 0.2025, 0.2048, 0.2037),
    "9A-25T-50x30": (None, 0.2656, 0.2676, 0.2615, 0.2646, 0.2582),
}
# Table 11: wall-clock training hours; Table 12: reported environment steps/s (for the
# PyMARL methods the acting rate only, for DQN/FDQN end to end)
TRAIN_HOURS: dict[str, tuple[float | None, ...]] = {
    "3A-6T-5x3": (1.87, 0.91, 2.93, 2.62, 2.74, 2.33),
    "3A-6T-10x6": (1.84, 1.0, 2.7, 2.25, 2.42, 2.27),
    "3A-12T-10x6": (3.45, 0.86, 2.1, 2.07, 2.21, 2.07),
    "5A-12T-10x6": (None, 1.09, 2.21, 2.41, 2.31, 2.54),
    "5A-25T-25x15": (None, 11.22, 29.42, 30.69, 30.7, 29.44),
    "5A-25T-50x30": (None, 11.76, 28.92, 28.91, 29.33, 28.94),
    "5A-50T-50x30": (None, 13.68, 32.25, 32.54, 32.8, 32.2),
    "5A-100T-50x30": (None, 17.77, 41.73, 41.91, 42.03, 41.43),
    "9A-25T-50x30": (None, 16.01, 33.74, 33.69, 33.38, 33.13),
}
TRAIN_STEPS_PER_S: dict[str, tuple[float | None, ...]] = {
    "3A-6T-5x3": (304.95, 651.25, 585.28, 588.79, 591.51, 581.5),
    "3A-6T-10x6": (326.63, 698.67, 594.15, 603.12, 599.77, 584.02),
    "3A-12T-10x6": (164.04, 708.92, 595.63, 605.16, 592.36, 590.13),
    "5A-12T-10x6": (None, 556.31, 575.19, 573.94, 569.53, 566.4),
    "5A-25T-25x15": (None, 526.52, 548.01, 540.53, 539.69, 545.24),
    "5A-25T-50x30": (None, 515.07, 541.62, 538.73, 539.68, 539.2),
    "5A-50T-50x30": (None, 473.66, 472.2, 469.93, 472.72, 471.41),
    "5A-100T-50x30": (None, 421.39, 375.49, 375.01, 377.34, 376.93),
    "9A-25T-50x30": (None, 369.71, 486.53, 484.76, 487.88, 485.53),
}
# Table 13: COMA (return, conflict rate, conflicts per task, per-agent diversity as
# D/n, throughput)
COMA: dict[str, tuple[float, ...]] = {
    "3A-6T-5x3": (214.94, 0.0278, 0.055, 0.169, 0.505),
    "3A-6T-10x6": (198.66, 0.0562, 0.17, 0.112, 0.331),
    "3A-12T-10x6": (493.36, 0.0963, 0.278, 0.117, 0.347),
    "5A-12T-10x6": (488.2, 0.251, 0.521, 0.097, 0.482),
    "5A-25T-25x15": (1248.35, 0.0904, 0.292, 0.063, 0.31),
    "5A-25T-50x30": (835.63, 0.0382, 0.223, 0.035, 0.171),
    "5A-50T-50x30": (2676.18, 0.0303, 0.159, 0.038, 0.19),
    "5A-100T-50x30": (6003.06, 0.0248, 0.122, 0.04, 0.203),
    "9A-25T-50x30": (853.51, 0.105, 0.418, 0.028, 0.251),
}

# Table 14: direction and Welch significance of each controlled scaling comparison
# (analyses.stat.SCALING_PAIRS), per metric, for DQN FDQN VDN QMIX QTRAN IQL ("–": not run).
# The sideways table's text runs bottom row first; the rows below are in the paper's order
# (Env Size Baseline first), checked against Section 5.4's prose and the DQN columns, which
# exist only for the two comparisons between 3-agent configurations.
TABLE14: dict[str, dict[str, str]] = {
    "R": {"env_baseline": "↓* ↓* ↓* ↓* ↓* ↓*", "env_extreme": "– ↓* ↓* ↓* ↓* ↓*",
          "tasks_baseline": "↑* ↑* ↑* ↑* ↑* ↑*", "tasks_extreme_1": "– ↑* ↑* ↑* ↑* ↑*",
          "tasks_extreme_2": "– ↑* ↑* ↑* ↑* ↑*", "agents_baseline": "– ↑* ↑ns ↓ns ↓ns ↓*",
          "agents_extreme": "– ↑* ↑* ↑* ↑* ↑*"},
    "Th": {"env_baseline": "↓* ↓* ↓* ↓* ↓* ↓*", "env_extreme": "– ↓* ↓* ↓* ↓* ↓*",
           "tasks_baseline": "↑* ↑* ↑* ↑* ↑* ↑*", "tasks_extreme_1": "– ↑* ↑* ↑* ↑* ↑*",
           "tasks_extreme_2": "– ↑* ↑* ↑* ↑* ↑*", "agents_baseline": "– ↑* ↑* ↑* ↑* ↑*",
           "agents_extreme": "– ↑* ↑* ↑* ↑* ↑*"},
    "CR": {"env_baseline": "↓ns ↓ns ↑ns ↑ns ↓* ↓ns", "env_extreme": "– ↓* ↓* ↓* ↓* ↓*",
           "tasks_baseline": "↑* ↑ns ↑* ↑* ↑ns ↓*", "tasks_extreme_1": "– ↓ns ↓ns ↓* ↓* ↓*",
           "tasks_extreme_2": "– ↓* ↑ns ↓ns ↓* ↓*", "agents_baseline": "– ↑* ↑* ↑* ↑* ↑*",
           "agents_extreme": "– ↑* ↑* ↑* ↑* ↑*"},
    "TC": {"env_baseline": "↓ns ↑ns ↑ns ↑ns ↓ns ↑ns", "env_extreme": "– ↓* ↓* ↓* ↓* ↓*",
           "tasks_baseline": "↑* ↑* ↑* ↑* ↑* ↑*", "tasks_extreme_1": "– ↑* ↑* ↑* ↑* ↑*",
           "tasks_extreme_2": "– ↓ns ↑* ↑* ↑* ↑*", "agents_baseline": "– ↑* ↑* ↑* ↑* ↑*",
           "agents_extreme": "– ↑* ↑* ↑* ↑* ↑*"},
    "CPT": {"env_baseline": "↓ns ↑ns ↑ns ↑ns ↓ns ↑ns", "env_extreme": "– ↓* ↓* ↓* ↓* ↓*",
            "tasks_baseline": "↑* ↑ns ↑* ↑* ↓ns ↓*", "tasks_extreme_1": "– ↓* ↓* ↓* ↓* ↓*",
            "tasks_extreme_2": "– ↓* ↓ns ↓* ↓* ↓*", "agents_baseline": "– ↑* ↑* ↑* ↑* ↑*",
            "agents_extreme": "– ↑* ↑* ↑* ↑* ↑*"},
    "PAD": {"env_baseline": "↓* ↓* ↓* ↓* ↓* ↓*", "env_extreme": "– ↓* ↓* ↓* ↓* ↓*",
            "tasks_baseline": "↑* ↑* ↑* ↑* ↑* ↑*", "tasks_extreme_1": "– ↑* ↑* ↑* ↑* ↑*",
            "tasks_extreme_2": "– ↑* ↑* ↑* ↑* ↑*", "agents_baseline": "– ↓* ↓* ↓* ↓* ↓*",
            "agents_extreme": "– ↓* ↓* ↓* ↓* ↓*"},
}


def paper_cell(metric: str, pair_id: str, method: str) -> str:
    """Return Table 14's cell for (metric abbreviation, scaling pair, method), "–" where the
    paper has none (a method it did not run)."""
    row = TABLE14.get(metric, {}).get(pair_id)
    if row is None or method not in PAPER_METHODS:
        return "–"
    return row.split()[PAPER_METHODS.index(method)]


def paper_value(table: dict[str, tuple[float | None, ...]], config: str,
                method: str) -> float | None:
    """Return a per-method table's published value (None where the paper has none)."""
    row = table.get(config)
    if row is None or method not in PAPER_METHODS:
        return None
    return row[PAPER_METHODS.index(method)]
