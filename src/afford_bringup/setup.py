"""ROS 2 ament_python package that is also a pip-installable Python package."""

from glob import glob
from pathlib import Path

from setuptools import find_packages, setup

PACKAGE = "afford_bringup"
# One console script per node (what launch_ros runs); the modules are what `afford bringup` runs.
HERE = Path(__file__).resolve().parent
NODES = ("sim_world", "camera", "perception", "planner", "executor", "task_server")

setup(
    name=PACKAGE,
    version="0.1.0",
    description="Graph description, parameters, launch files, the afford CLI and pip-only launcher.",
    packages=find_packages(exclude=["test", "test.*"]),
    include_package_data=True,
    package_data={f"{PACKAGE}.isaac": ["bridge.yaml"]},
    data_files=[
        # The ament index marker lets ament_index_python find the package in the venv.
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", sorted(glob("launch/*.launch.py", root_dir=HERE))),
        # The parameter files live in the repository's top-level config/ (graph.config_dir finds
        # them there in a checkout, and here, under share/, once installed).
        (f"share/{PACKAGE}/config", sorted(glob("../../config/*.yaml", root_dir=HERE))),
    ],
    # Where `ros2 run` and launch_ros look for a package's executables (what setup.cfg says in
    # ROS 2 templates); a pip install makes the console scripts from entry points in bin/.
    options={
        "develop": {"script_dir": f"$base/lib/{PACKAGE}"},
        "install": {"install_scripts": f"$base/lib/{PACKAGE}"},
    },
    zip_safe=False,
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "afford = afford_bringup.cli:main",
            *(f"{n} = {PACKAGE}.nodes.{n}:main" for n in NODES),
        ]
    },
)
