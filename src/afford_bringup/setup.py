"""ROS 2 ament_python package that is also a pip-installable Python package."""

from glob import glob
from pathlib import Path

from setuptools import find_packages, setup

PACKAGE = "afford_bringup"
HERE = Path(__file__).resolve().parent

setup(
    name=PACKAGE,
    version="0.1.0",
    description="Graph descriptions, parameter files, launch files and the pip-only launcher.",
    packages=find_packages(exclude=["test", "test.*"]),
    include_package_data=True,
    data_files=[
        # The ament index marker lets ament_index_python find the package in the venv.
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", sorted(glob("launch/*.launch.py", root_dir=HERE))),
        # The parameter files live in the repository's top-level config/ (graph.config_dir finds
        # them there in a checkout, and here, under share/, once installed).
        (f"share/{PACKAGE}/config", sorted(glob("../../config/*.yaml", root_dir=HERE))
         + sorted(glob("../../config/*.xml", root_dir=HERE))),
    ],
    zip_safe=False,
    license="Apache-2.0",
)
