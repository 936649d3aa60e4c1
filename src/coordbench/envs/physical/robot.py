"""CoBot: the one embodiment of the physical suite, as MJCF generated in Python.

A holonomic base (world-axis slides x, y and a yaw hinge, driven by force-limited velocity
servos, so partners can push and drag each other), a torso lift, a planar two-link arm
(shoulder and elbow pitch), a wrist pitch (which can keep the gripper level, so a held bottle
stays upright), a wrist roll and a two-finger parallel gripper that grasps by friction only.
An egocentric camera sits at head height, offset sideways from the arm and tilted down to see
the hands and the partners.

Action per robot (9): [vx, vy, wz] in the robot frame (m/s, rad/s), torso lift target (m,
0..LIFT_MAX), shoulder and elbow targets (rad), wrist pitch relative to level (rad: 0 keeps
the gripper level whatever the arm does; the wrist's low-level controller adds -(shoulder +
elbow)), wrist roll target (rad), grip (>= 0.5 closes the fingers). Proprioception per
robot (18): base x, y, yaw; lift, shoulder, elbow, wrist pitch, wrist roll, finger opening;
and their velocities.
"""

from __future__ import annotations

import math

import numpy as np

L1, L2 = 0.45, 0.40  # arm link lengths (m)
SH_H = 0.55  # shoulder height above the floor at zero lift
SH_X = 0.12  # shoulder forward offset on the base
LIFT_MAX = 0.30
FINGER_CLOSED = 0.035
ACTION_DIM = 9
PROPRIO_DIM = 18
ACTION_LOW = np.array([-0.6, -0.6, -1.0, 0.0, -1.6, -2.6, -2.0, -1.7, 0.0])
ACTION_HIGH = np.array([0.6, 0.6, 1.0, LIFT_MAX, 1.6, 2.6, 2.0, 1.7, 1.0])
COLORS = (".8 .3 .3 1", ".3 .3 .8 1", ".3 .7 .3 1")
JOINTS = ("x", "y", "yaw", "lift", "sh", "el", "wp", "wr", "fl", "fr")


def robot_xml(i: int, x: float, y: float, yaw: float) -> str:
    """Return the <body> of robot i standing at (x, y) facing yaw (rad)."""
    c = COLORS[i % len(COLORS)]
    finger = ('type="box" size="0.03 0.008 0.03" rgba=".2 .2 .2 1" mass="0.05" '
              'friction="1.5 0.02 0.002" condim="4" contype="1" conaffinity="1"')
    return f"""
    <body name="r{i}_base" pos="{x:.4f} {y:.4f} 0">
      <joint name="r{i}_x" type="slide" axis="1 0 0" damping="50"/>
      <joint name="r{i}_y" type="slide" axis="0 1 0" damping="50"/>
      <joint name="r{i}_yaw" type="hinge" axis="0 0 1" damping="20" ref="{yaw:.6f}"/>
      <body name="r{i}_chassis" euler="0 0 {yaw:.6f}">
        <geom name="r{i}_body" type="box" size="0.18 0.18 0.22" pos="0 0 0.25" rgba="{c}"
              mass="30" contype="2" conaffinity="3"/>
        <camera name="r{i}_ego" pos="0.02 0.14 0.95" xyaxes="0 -1 0 0.42 0 0.906" fovy="100"/>
        <body name="r{i}_torso" pos="0 0 0">
          <joint name="r{i}_lift" type="slide" axis="0 0 1" range="0 {LIFT_MAX}" damping="200"
                 armature="1"/>
          <geom type="cylinder" size="0.05 0.06" pos="{SH_X} 0 {SH_H - 0.06}" rgba="{c}" mass="2"
                contype="0" conaffinity="0"/>
          <body name="r{i}_upper" pos="{SH_X} 0 {SH_H}">
            <joint name="r{i}_sh" type="hinge" axis="0 -1 0" range="-1.6 1.6" damping="5"
                   armature="0.05"/>
            <geom type="capsule" fromto="0 0 0 {L1} 0 0" size="0.035" rgba="{c}" mass="1.5"
                  contype="0" conaffinity="0"/>
            <body name="r{i}_fore" pos="{L1} 0 0">
              <joint name="r{i}_el" type="hinge" axis="0 -1 0" range="-2.6 2.6" damping="3"
                     armature="0.03"/>
              <geom type="capsule" fromto="0 0 0 {L2} 0 0" size="0.03" rgba="{c}" mass="1.0"
                    contype="0" conaffinity="0"/>
              <body name="r{i}_hand" pos="{L2} 0 0">
                <joint name="r{i}_wp" type="hinge" axis="0 -1 0" range="-2.6 2.6" damping="2"
                       armature="0.02"/>
                <joint name="r{i}_wr" type="hinge" axis="1 0 0" range="-1.7 1.7" damping="1"
                       armature="0.02"/>
                <site name="r{i}_tcp" pos="0 0 0" size="0.01"/>
                <geom type="box" size="0.02 0.06 0.02" rgba=".3 .3 .3 1" mass="0.2" contype="0"
                      conaffinity="0"/>
                <body name="r{i}_fl" pos="0 0.05 0">
                  <joint name="r{i}_fl" type="slide" axis="0 -1 0" range="0 {FINGER_CLOSED}"
                         damping="5" armature="0.02"/>
                  <geom name="r{i}_fl" {finger}/>
                </body>
                <body name="r{i}_fr" pos="0 -0.05 0">
                  <joint name="r{i}_fr" type="slide" axis="0 1 0" range="0 {FINGER_CLOSED}"
                         damping="5" armature="0.02"/>
                  <geom name="r{i}_fr" {finger}/>
                </body>
              </body>
            </body>
          </body>
        </body>
      </body>
    </body>"""


def actuator_xml(i: int) -> str:
    """Return robot i's actuators (order: vx, vy, wz, lift, sh, el, wp, wr, fl, fr)."""
    return f"""
    <velocity name="r{i}_vx" joint="r{i}_x" kv="3000" forcerange="-2000 2000"/>
    <velocity name="r{i}_vy" joint="r{i}_y" kv="3000" forcerange="-2000 2000"/>
    <velocity name="r{i}_wz" joint="r{i}_yaw" kv="800" forcerange="-600 600"/>
    <position name="r{i}_lift" joint="r{i}_lift" kp="20000" kv="2000" forcerange="-3000 3000"/>
    <position name="r{i}_sh" joint="r{i}_sh" kp="600" kv="40" forcerange="-150 150"/>
    <position name="r{i}_el" joint="r{i}_el" kp="400" kv="25" forcerange="-100 100"/>
    <position name="r{i}_wp" joint="r{i}_wp" kp="150" kv="6" forcerange="-40 40"/>
    <position name="r{i}_wr" joint="r{i}_wr" kp="60" kv="3" forcerange="-20 20"/>
    <position name="r{i}_fl" joint="r{i}_fl" kp="2000" kv="10" forcerange="-60 60"/>
    <position name="r{i}_fr" joint="r{i}_fr" kp="2000" kv="10" forcerange="-60 60"/>"""


def ik2(r: float, z: float) -> tuple[float, float]:
    """Return (shoulder, elbow) placing the wrist at forward distance r and height z from the
    shoulder (elbow down; positive angles raise the links); unreachable targets are clamped."""
    c = min(max(float((r * r + z * z - L1 * L1 - L2 * L2) / (2 * L1 * L2)), -1.0), 1.0)
    el = -math.acos(c)
    sh = math.atan2(z, r) - math.atan2(L2 * math.sin(el), L1 + L2 * math.cos(el))
    return sh, el
