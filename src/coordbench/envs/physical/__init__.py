"""Physical multi-robot collaboration (after CoHuB) on MuJoCo: CoBots, tasks, phases.

The GL backend for headless rendering is chosen before MuJoCo is imported: EGL when its
library is present, else OSMesa (Debian package libosmesa6). A MUJOCO_GL set by the user wins.
"""

from __future__ import annotations

import ctypes.util
import os

if "MUJOCO_GL" not in os.environ:
    os.environ["MUJOCO_GL"] = "egl" if ctypes.util.find_library("EGL") else "osmesa"
os.environ.setdefault("LP_NUM_THREADS", "1")  # llvmpipe must not fight the simulation
