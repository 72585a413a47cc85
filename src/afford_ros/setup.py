"""ROS 2 ament_python package that is also a pip-installable Python package."""

from setuptools import find_packages, setup

PACKAGE = "afford_ros"
# One console script per node (what launch_ros runs); the modules are what `afford bringup` runs.
NODES = ("sim_world", "camera", "perception", "planner", "executor", "task_server")

setup(
    name=PACKAGE,
    version="0.1.0",
    description="The ROS 2 nodes, the graph contract, the robot drivers and the graph clients.",
    packages=find_packages(exclude=["test", "test.*"]),
    include_package_data=True,
    package_data={f"{PACKAGE}.isaac": ["bridge.yaml"]},
    data_files=[
        # The ament index marker lets ament_index_python find the package in the venv.
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
    ],
    # Where `ros2 run` and launch_ros look for a package's executables (what setup.cfg says in
    # ROS 2 templates); a pip install makes the console scripts from entry points in bin/.
    options={
        "develop": {"script_dir": f"$base/lib/{PACKAGE}"},
        "install": {"install_scripts": f"$base/lib/{PACKAGE}"},
    },
    entry_points={"console_scripts": [f"{n} = {PACKAGE}.nodes.{n}:main" for n in NODES]},
    zip_safe=False,
    license="Apache-2.0",
)
