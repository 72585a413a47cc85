"""ROS 2 ament_python package that is also a pip-installable Python package."""

from setuptools import find_packages, setup

PACKAGE = "afford_data"

setup(
    name=PACKAGE,
    version="0.1.0",
    description="Data generation: the affordance model's part-labelled clouds (and, later, demonstrations).",
    packages=find_packages(exclude=["test", "test.*"]),
    include_package_data=True,
    # The independent split's free-text queries (another author's), read beside the module.
    package_data={PACKAGE: ["*.tsv"]},
    data_files=[
        # The ament index marker lets ament_index_python find the package in the venv.
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
    ],
    zip_safe=False,
    license="Apache-2.0",
)
