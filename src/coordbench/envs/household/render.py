"""Deterministic images of what an agent sees, drawn from the scene's positions and boxes.

Four 256x256 views (front = +z, right = +x, back = -z, left = -x) from a camera at the agent's
position, 1.8 m high, 90 degree field of view, pitched 30 degrees down, like the paper's
cameras. Only nodes visible to the agent are drawn: each as the screen rectangle of its
projected bounding box, coloured by class, far to near, labelled "class (id)" so a vision
model can name what it sees. The same state always gives the same PNG bytes.
"""

from __future__ import annotations

import hashlib
import io
import math
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from .engine import HouseholdEnv

SIZE = 256
VIEWS = (("front", 0.0), ("right", 90.0), ("back", 180.0), ("left", 270.0))
EYE = 1.8
PITCH = math.radians(30.0)
FOCAL = SIZE / 2  # 90 degree horizontal field of view
_FONT = ImageFont.load_default()


def _colour(name: str) -> tuple[int, int, int]:
    h = hashlib.sha256(name.encode()).digest()
    return (60 + h[0] % 160, 60 + h[1] % 160, 60 + h[2] % 160)


def _project(px: float, py: float, pz: float, yaw: float, cam: tuple[float, float]
             ) -> tuple[float, float, float] | None:
    dx, dy, dz = px - cam[0], py - EYE, pz - cam[1]
    cy, sy = math.cos(yaw), math.sin(yaw)
    right = cy * dx - sy * dz
    fwd = sy * dx + cy * dz
    # pitch the camera down: rotate (fwd, up) by PITCH
    depth = fwd * math.cos(PITCH) - dy * math.sin(PITCH)
    up = fwd * math.sin(PITCH) + dy * math.cos(PITCH)
    if depth <= 0.05:
        return None
    return (SIZE / 2 + FOCAL * right / depth, SIZE / 2 - FOCAL * up / depth, depth)


def _overlaps(a: tuple[float, float, float, float], b: tuple[float, float, float, float]
              ) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _label_spot(draw: ImageDraw.ImageDraw, text: str, box: tuple[float, float, float, float],
                taken: list[tuple[float, float, float, float]]) -> tuple[float, float]:
    """Return where a box's label goes: its top-left corner, or the first place further down
    the box (then below it, then anywhere down the image) that overlaps no label already
    drawn; the corner if the image has no free place."""
    left, top, right, bottom = draw.textbbox((0, 0), text, font=_FONT)
    w, h = right - left + 2, bottom - top + 2
    x = min(max(box[0] + 2, 0), SIZE - w)
    ys = [box[1] + 1 + k * h for k in range(int(max(1, (box[3] - box[1]) // h)))]
    ys += [box[3] + 1, *range(13, SIZE - int(h), int(h))]
    for y in ys:
        if 12 <= y <= SIZE - h and not any(_overlaps((x - 1, y - 1, x + w, y + h), t)
                                           for t in taken):
            return x, y
    return x, max(box[1] + 1, 13)


def label_layout(draw: ImageDraw.ImageDraw,
                 shapes: list[tuple[float, int, str, tuple[float, float, float, float]]]
                 ) -> list[tuple[tuple[float, float], str, tuple[float, float, float, float]]]:
    """Return (position, text, backing rectangle) of every box's "class (id)" label, nearest
    box first, each placed where it overlaps no earlier label: one drawn over another could
    be read by neither a person nor a vision model."""
    taken: list[tuple[float, float, float, float]] = [(0, 0, SIZE, 12)]  # the title bar
    out = []
    for _, nid, cls, box in sorted(shapes, reverse=True):
        text = f"{cls} ({nid})"
        spot = _label_spot(draw, text, box, taken)
        left, top, right, bottom = draw.textbbox(spot, text, font=_FONT)
        rect = (left - 1, top - 1, right + 1, bottom + 1)
        taken.append(rect)
        out.append((spot, text, rect))
    return out


def view_shapes(env: HouseholdEnv, agent: int, yaw_deg: float
                ) -> list[tuple[float, int, str, tuple[float, float, float, float]]]:
    """Return (-depth, node id, class, screen box) of every node agent `agent` sees looking
    along `yaw_deg`, clipped to the image."""
    yaw = math.radians(yaw_deg)
    cam = env.pos[agent]
    shapes = []
    for nid in env.visible(agent):
        node = env.scene.nodes[nid]
        x, z = env.node_pos[nid]
        sx, sy, sz = node.size
        y = node.y
        corners = [_project(x + ax * sx / 2, y + ay * sy / 2, z + az * sz / 2, yaw, cam)
                   for ax in (-1, 1) for ay in (-1, 1) for az in (-1, 1)]
        pts = [c for c in corners if c is not None]
        if len(pts) < 8:
            continue
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        box = (max(min(xs), -1), max(min(ys), -1), min(max(xs), SIZE), min(max(ys), SIZE))
        if box[0] >= SIZE or box[2] <= 0 or box[1] >= SIZE or box[3] <= 0:
            continue
        depth = sum(p[2] for p in pts) / len(pts)
        shapes.append((-depth, nid, node.class_name, box))
    return shapes


def render_view(env: HouseholdEnv, agent: int, yaw_deg: float, label: str) -> Image.Image:
    """Return one labelled view of agent `agent` looking along `yaw_deg` (0 = +z)."""
    img = Image.new("RGB", (SIZE, SIZE), (205, 200, 190))
    draw = ImageDraw.Draw(img)
    horizon = SIZE / 2 - FOCAL * math.tan(PITCH)
    draw.rectangle([0, horizon, SIZE, SIZE], fill=(150, 130, 110))
    shapes = view_shapes(env, agent, yaw_deg)
    for _, _nid, cls, box in sorted(shapes):
        draw.rectangle(box, fill=_colour(cls), outline=(20, 20, 20))
    for spot, text, rect in label_layout(draw, shapes):
        draw.rectangle(rect, fill=(20, 20, 20))
        draw.text(spot, text, fill=(255, 255, 255), font=_FONT)
    draw.rectangle([0, 0, SIZE, 12], fill=(30, 30, 30))
    draw.text((3, 1), f"agent {agent} - {label}", fill=(255, 255, 255), font=_FONT)
    return img


def render_agent(env: HouseholdEnv, agent: int) -> Image.Image:
    """Return the agent's four views side by side (1024 x 256)."""
    out = Image.new("RGB", (SIZE * len(VIEWS), SIZE))
    for k, (label, yaw) in enumerate(VIEWS):
        out.paste(render_view(env, agent, yaw, label), (k * SIZE, 0))
    return out


def render_team(env: HouseholdEnv) -> Image.Image:
    """Return every agent's four-view row stacked vertically (the vision leader's composite)."""
    rows = [render_agent(env, i) for i in range(env.n)]
    out = Image.new("RGB", (rows[0].width, SIZE * len(rows)))
    for k, row in enumerate(rows):
        out.paste(row, (0, k * SIZE))
    return out


def png_bytes(img: Image.Image) -> bytes:
    """Return the image as PNG bytes (no metadata, so identical images give identical bytes)."""
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=False)
    return buf.getvalue()


class ImageStore:
    """Content-addressed PNG storage: RUN/images/<sha256>.png, each image written once."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root) / "images"

    def put(self, data: bytes) -> str:
        """Store PNG bytes if new; return their sha256 (the file name without .png)."""
        digest = hashlib.sha256(data).hexdigest()
        path = self.root / f"{digest}.png"
        if not path.exists():
            from coordbench.core.atomic import write_atomic_bytes

            write_atomic_bytes(path, data)
        return digest
