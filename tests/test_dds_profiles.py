"""The stack's Fast DDS profiles (config/fastdds_profiles.xml) reach the service path of the
installed rmw_fastrtps.

CI lost a service's answer on a busy machine: rmw_fastrtps waits ``max_blocking_time`` of the
response writer (Fast DDS's default: 100 ms) for the client's reply reader to be discovered,
then drops the answer ("failed to send response (timeout)"), and the client waits forever. The
profile raises the wait to 2 s. A race of discovery cannot be staged on demand, so this makes a
reply reader that can never match (the client's reader asks for RELIABLE, the service's writer
offers BEST_EFFORT) and times how long the service waits before giving the answer up: the full
``max_blocking_time`` each time. Only lower bounds are asserted (a wait cannot end early; a busy
machine only makes it longer). A second run names a 4 s profile of the caller's own: the probe
follows the file it is given, so it is no constant.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from afford_bringup.graph import DDS_PROFILES, config_dir

PROBE = r"""
import sys, time
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_srvs.srv import Trigger

rclpy.init()
server, client_node = rclpy.create_node("dds_probe_server"), rclpy.create_node("dds_probe_client")
asked = []

def answer(_request, response):
    asked.append(1)
    response.success = True
    return response

server.create_service(Trigger, "/dds_probe", answer,
                      qos_profile=QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT))
client = client_node.create_client(Trigger, "/dds_probe",
                                   qos_profile=QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
spin = SingleThreadedExecutor()
spin.add_node(server)
end = time.monotonic() + 60
while not asked and time.monotonic() < end:
    client.call_async(Trigger.Request())  # until the request writer has matched
    start = time.monotonic()
    spin.spin_once(timeout_sec=0.2)
    if asked:
        print(f"WAITED {time.monotonic() - start:.3f}", flush=True)
        sys.exit(0)
sys.exit("the service never received a request in 60 s")
"""


def _waited(profiles: str | None) -> float:
    env = dict(os.environ, ROS_DOMAIN_ID=str(20 + os.getpid() % 80))
    if profiles is None:
        env.pop("FASTDDS_DEFAULT_PROFILES_FILE", None)
    else:
        env["FASTDDS_DEFAULT_PROFILES_FILE"] = profiles
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stdout + out.stderr
    (line,) = [x for x in out.stdout.splitlines() if x.startswith("WAITED ")]
    return float(line.split()[1])


def test_the_test_environment_names_the_stacks_profiles() -> None:
    """scripts/env.sh (which the README's commands and CI source) names the file."""
    named = os.environ.get("FASTDDS_DEFAULT_PROFILES_FILE")
    assert named and Path(named).resolve() == (config_dir() / DDS_PROFILES).resolve(), named


def test_a_service_waits_two_seconds_for_its_clients_reader(tmp_path: Path) -> None:
    ours = _waited(str(config_dir() / DDS_PROFILES))
    assert ours >= 1.95, f"the service gave its answer up after {ours:.2f} s: the profile was not read"
    longer = tmp_path / "lab.xml"
    longer.write_text(
        (config_dir() / DDS_PROFILES).read_text().replace("<sec>2</sec>", "<sec>4</sec>"), encoding="utf-8"
    )
    assert _waited(str(longer)) >= 3.95
