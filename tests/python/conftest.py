"""The pytest suite of the Python front-end. CTest runs it with the build's python/ folder on
PYTHONPATH (tests/CMakeLists.txt); by hand: PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python"""
import os

import pytest

import tapegrad


@pytest.fixture(autouse=True)
def one_thread():
    """Pinned numbers are per thread count: the suite runs on one."""
    tapegrad.set_num_threads(1)
    yield


@pytest.fixture
def tmp_dir(tmp_path):
    return str(tmp_path)


def repo_root():
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
