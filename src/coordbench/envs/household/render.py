"""Deterministic images of what an agent sees, drawn from the scene's positions and boxes.

Four 256x256 views (front = +z, right = +x, back = -z, left = -x) from a camera at the agent's
position, 1.8 m high, 90 degree field of view, pitched 30 degrees down, like the paper's
cameras. Only nodes visible to the agent are drawn: each as the screen rectangle of its
projected bounding box, coloured by class, far to near, labelled "class (id)" so a vision
model can name what it sees. The same state always gives the same PNG bytes.

An agent's image is the four views in a 2x2 grid, 512x512, labels in a 14 px font: a model
that scales its input to 336 px still reads labels about 9 px high (a 1024x256 strip would
leave them 3 px high in a 336x84 band). An object seen in two views is labelled once, in the
view that shows most of it.
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
LABEL_PX = 14
_FONT = ImageFont.load_default(size=LABEL_PX)  # Pillow's own FreeType font: the same bytes
TITLE = LABEL_PX + 4  # the title bar's height


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
    ys += [box[3] + 1, *range(TITLE + 1, SIZE - int(h), int(h))]
    for y in ys:
        # the backing rectangle label_layout draws for a label at (x, y)
        rect = (x + left - 1, y + top - 1, x + right + 1, y + bottom + 1)
        if TITLE <= y <= SIZE - h and not any(_overlaps(rect, t) for t in taken):
            return x, y
    return x, max(box[1] + 1, TITLE + 1)


def label_layout(draw: ImageDraw.ImageDraw,
                 shapes: list[tuple[float, int, str, tuple[float, float, float, float]]],
                 labelled: set[int] | None = None
                 ) -> list[tuple[tuple[float, float], str, tuple[float, float, float, float]]]:
    """Return (position, text, backing rectangle) of every box's "class (id)" label (only
    the nodes in `labelled` when given), nearest box first, each placed where it overlaps no
    earlier label: one drawn over another could be read by neither a person nor a vision
    model."""
    taken: list[tuple[float, float, float, float]] = [(0, 0, SIZE, TITLE)]  # the title bar
    out = []
    for _, nid, cls, box in sorted(shapes, reverse=True):
        if labelled is not None and nid not in labelled:
            continue
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


def _area(box: tuple[float, float, float, float]) -> float:
    return max(0.0, min(box[2], SIZE) - max(box[0], 0)) * max(0.0, min(box[3], SIZE)
                                                             - max(box[1], 0))


def label_owners(views: list[list[tuple[float, int, str, tuple[float, float, float, float]]]]
                 ) -> list[set[int]]:
    """Return, per view, the nodes labelled there: each node in the view that shows the
    largest part of it (the first such view on a tie), so no label repeats across views."""
    best: dict[int, tuple[float, int]] = {}
    for k, shapes in enumerate(views):
        for _, nid, _, box in shapes:
            if nid not in best or _area(box) > best[nid][0]:
                best[nid] = (_area(box), k)
    return [{nid for nid, (_, k) in best.items() if k == view} for view in range(len(views))]


def render_view(env: HouseholdEnv, agent: int, yaw_deg: float, label: str,
                labelled: set[int] | None = None, shapes: list | None = None) -> Image.Image:
    """Return one labelled view of agent `agent` looking along `yaw_deg` (0 = +z), with
    labels on the nodes in `labelled` (every node it shows when None); `shapes`: the
    view's `view_shapes`, when the caller has them already."""
    img = Image.new("RGB", (SIZE, SIZE), (205, 200, 190))
    draw = ImageDraw.Draw(img)
    horizon = SIZE / 2 - FOCAL * math.tan(PITCH)
    draw.rectangle([0, horizon, SIZE, SIZE], fill=(150, 130, 110))
    if shapes is None:
        shapes = view_shapes(env, agent, yaw_deg)
    for _, _nid, cls, box in sorted(shapes):
        draw.rectangle(box, fill=_colour(cls), outline=(20, 20, 20))
    for spot, text, rect in label_layout(draw, shapes, labelled):
        draw.rectangle(rect, fill=(20, 20, 20))
        draw.text(spot, text, fill=(255, 255, 255), font=_FONT)
    draw.rectangle([0, 0, SIZE, TITLE], fill=(30, 30, 30))
    draw.text((3, 1), f"agent {agent} - {label}", fill=(255, 255, 255), font=_FONT)
    return img


def render_agent(env: HouseholdEnv, agent: int) -> Image.Image:
    """Return the agent's four views in a 2x2 grid (512 x 512: front, right / back, left),
    each node labelled in one view only (`label_owners`)."""
    views = [view_shapes(env, agent, yaw) for _, yaw in VIEWS]
    owners = label_owners(views)
    out = Image.new("RGB", (2 * SIZE, 2 * SIZE))
    for k, (label, yaw) in enumerate(VIEWS):
        view = render_view(env, agent, yaw, label, owners[k], views[k])
        out.paste(view, ((k % 2) * SIZE, (k // 2) * SIZE))
    draw = ImageDraw.Draw(out)  # the views' borders: no box reads as one across two views
    draw.rectangle([SIZE - 1, 0, SIZE, 2 * SIZE], fill=(30, 30, 30))
    draw.rectangle([0, SIZE - 1, 2 * SIZE, SIZE], fill=(30, 30, 30))
    return out


def render_team(env: HouseholdEnv) -> Image.Image:
    """Return every agent's 2x2 grid side by side in rows of at most two agents (the vision
    leader's composite: 1032 px wide for two or more agents, an 8 px gap between agents)."""
    grids = [render_agent(env, i) for i in range(env.n)]
    step = grids[0].width + 8  # a black gap between agents, wider than a view's border
    cols = min(2, len(grids))
    out = Image.new("RGB", (step * cols - 8, step * math.ceil(len(grids) / cols) - 8))
    for k, grid in enumerate(grids):
        out.paste(grid, ((k % cols) * step, (k // cols) * step))
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
