"""One live tabserver and one headless Chromium per test module (console_harness.py)."""

import os
import tempfile
from pathlib import Path

import pytest
from console_harness import Browser, Server


@pytest.fixture(scope="module")
def server():
    binary = os.environ.get("TABSERVER_BIN")
    if not binary:
        pytest.fail("TABSERVER_BIN is not set: scripts/browser-test builds tabserver and sets it")
    with tempfile.TemporaryDirectory(prefix="console-test-") as workdir:
        running = Server(binary, Path(workdir))
        try:
            yield running
        finally:
            running.stop()


@pytest.fixture(scope="module")
def browser(server):
    running = Browser(server.base)
    try:
        yield running
    finally:
        running.quit()
