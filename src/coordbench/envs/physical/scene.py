"""The MJCF world around the robots: physics and rendering settings, floor, light, cameras.

Physics at 200 Hz (timestep 5 ms), control at 50 Hz (4 substeps). Shadows and multisampling
are off: MuJoCo's default shadow map costs over 100 ms per offscreen frame on a CPU renderer,
against 3-6 ms without it.
"""

from __future__ import annotations

from .robot import actuator_xml, robot_xml

TIMESTEP = 0.005
SUBSTEPS = 4
CONTROL_DT = TIMESTEP * SUBSTEPS


def world_xml(name: str, robots: list[tuple[float, float, float]], objects: str,
              statics: str = "", equality: str = "", embodiment: str = "cobot") -> str:
    """Return a complete MJCF model: `robots` as (x, y, yaw), task `objects` and `statics`.
    For `embodiment` g1 the robots are not in the MJCF: each one's pose is a custom numeric
    `robotK_pose`, where G1Env attaches a G1."""
    if embodiment == "g1":
        bodies = acts = ""
        custom = "<custom>" + "".join(
            f'<numeric name="robot{i}_pose" data="{x:.6f} {y:.6f} {yaw:.6f}"/>'
            for i, (x, y, yaw) in enumerate(robots)) + "</custom>"
    else:
        bodies = "".join(robot_xml(i, x, y, yaw) for i, (x, y, yaw) in enumerate(robots))
        acts = "".join(actuator_xml(i) for i in range(len(robots)))
        custom = ""
    return f"""
<mujoco model="{name}">
  <compiler angle="radian"/>
  <option timestep="{TIMESTEP}" cone="elliptic" impratio="10" integrator="implicitfast"/>
  <visual><global offwidth="320" offheight="240"/><quality shadowsize="0" offsamples="0"/></visual>
  <default><geom solref="0.005 1"/></default>
  <asset>
    <texture name="grid" type="2d" builtin="checker" rgb1=".6 .6 .6" rgb2=".5 .5 .5"
             width="256" height="256"/>
    <material name="grid" texture="grid" texrepeat="8 8"/>
  </asset>
  <worldbody>
    <light pos="0 0 4" dir="0 0 -1" directional="true"/>
    <geom name="floor" type="plane" size="8 8 0.1" material="grid" contype="1" conaffinity="3"/>
    <camera name="global" pos="0 -3.2 3.0" xyaxes="1 0 0 0 0.7 0.7" fovy="60"/>
    {statics}
    {objects}
    {bodies}
  </worldbody>
  <actuator>{acts}
  </actuator>
  <equality>{equality}</equality>{custom}
</mujoco>"""
