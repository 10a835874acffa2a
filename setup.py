from pathlib import Path

from setuptools import find_packages, setup

lines = Path(__file__).with_name("requirements.txt").read_text().splitlines()
requirements = [r for r in (line.split("#")[0].strip() for line in lines) if r and not r.startswith("-")]

setup(
    name="dcgmm_tf",
    version="0.1.0",
    description="Deep Conditional Gaussian Mixture Model (DC-GMM) for constrained clustering in TensorFlow/Keras 3",
    long_description=Path(__file__).with_name("README.md").read_text(),
    long_description_content_type="text/markdown",
    packages=find_packages(include=["dcgmm_tf", "dcgmm_tf.*"]),  # experiments/ runs from the repository
    package_data={"dcgmm_tf.labelling": ["page.html"]},  # the labelling page
    python_requires=">=3.10",
    install_requires=requirements,
    extras_require={"test": ["pytest>=8", "hypothesis>=6.100", "pytest-xdist>=3.5"]},
)
