"""Maps the top-level environments/ and baselines/ folders into the jaxmarl_suite namespace.

Everything else lives in pyproject.toml; this file exists only because the mapping needs
find_packages over several roots, which pyproject's static tables cannot express.
"""

from setuptools import find_packages, setup

MAPPED_ROOTS = ("environments", "baselines")

packages = find_packages(include=["jaxmarl_suite", "jaxmarl_suite.*"])
for root in MAPPED_ROOTS:
    packages.append(f"jaxmarl_suite.{root}")
    packages += [f"jaxmarl_suite.{root}.{sub}" for sub in find_packages(root)]

setup(
    packages=packages,
    package_dir={f"jaxmarl_suite.{root}": root for root in MAPPED_ROOTS},
)
