"""ROS 2 ament_python package that is also a pip-installable Python package."""

from setuptools import find_packages, setup

PACKAGE = "afford_perception"

setup(
    name=PACKAGE,
    version="0.1.0",
    description="Cameras, object segmentation and clouds, task-sentence parsing, affordance grounding.",
    packages=find_packages(exclude=["test", "test.*"]),
    include_package_data=True,
    # The trained affordance model ships with the package (about 1.2 MB).
    package_data={PACKAGE: ["affordance/weights/*.pt", "preafford/weights/*.pt", "preafford/weights/*.json"]},
    data_files=[
        # The ament index marker lets ament_index_python find the package in the venv.
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
    ],
    zip_safe=False,
    license="Apache-2.0",
)
