"""ROS 2 ament_python package that is also a pip-installable Python package."""

from setuptools import find_packages, setup

PACKAGE = "afford_policy"

setup(
    name=PACKAGE,
    version="0.1.0",
    description="Visuomotor policies via LeRobot: closed-loop rollouts, evaluation, the policy node.",
    packages=find_packages(exclude=["test", "test.*"]),
    include_package_data=True,
    data_files=[
        # The ament index marker lets ament_index_python find the package in the venv.
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
    ],
    # Where `ros2 run` and launch_ros look for a package's executables (see afford_ros/setup.py).
    options={
        "develop": {"script_dir": f"$base/lib/{PACKAGE}"},
        "install": {"install_scripts": f"$base/lib/{PACKAGE}"},
    },
    entry_points={"console_scripts": [f"policy = {PACKAGE}.nodes.policy:main"]},
    zip_safe=False,
    license="Apache-2.0",
)
