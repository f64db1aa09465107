"""What the browser steps share: a live tabserver, a headless Chromium, and small readers of the page.

Debian's headless Chromium, driven by Selenium through Debian's chromedriver (its path is given, so Selenium
Manager downloads nothing), against a live `tabserver serve --store memory:` on 127.0.0.1 (port 0, the bound
port read back from its log). conftest.py makes one server and one browser per test module.

Environment: TABSERVER_BIN (required: the tabserver executable), CONSOLE_SCREENSHOTS_DIR (default
/tmp/console-shots), CHROMIUM_BIN (default /usr/bin/chromium), CHROMEDRIVER_BIN (default /usr/bin/chromedriver).
"""

import base64
import os
import re
import secrets
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from xml.etree import ElementTree

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

REPOSITORY = Path(__file__).resolve().parents[2]
SHOTS = Path(os.environ.get("CONSOLE_SCREENSHOTS_DIR", "/tmp/console-shots"))
SERVER_START_SECONDS = 30
WAIT_SECONDS = 15
SVG = "{http://www.w3.org/2000/svg}"

CONSOLE_TOKEN = "console-" + secrets.token_hex(16)
OTHER_TOKEN = "other-" + secrets.token_hex(16)


# MARK: The server


class Server:
    """A `tabserver serve` process on 127.0.0.1 with two operators' tokens (`console` and `other`), and `arguments`
    after the usual ones (e.g. `--environments`)."""

    def __init__(self, binary: str, workdir: Path, arguments=()):
        tokens = workdir / "tokens"
        tokens.write_text(f"console:{CONSOLE_TOKEN}\nother:{OTHER_TOKEN}\n")
        self.log_path = workdir / "server.log"
        self.log = self.log_path.open("w")  # closed in stop(), after the process ends
        environment = {k: v for k, v in os.environ.items() if not k.startswith("TABSERVER_")}
        environment["TABSERVER_ADMIN_TOKENS_FILE"] = str(tokens)
        # The webhooks step's receiver is on 127.0.0.1 (a server without webhooks ignores this).
        environment["TABSERVER_WEBHOOK_ALLOW_PRIVATE"] = "1"
        self.process = subprocess.Popen(
            [binary, "serve", "--host", "127.0.0.1", "--port", "0", "--store", "memory:", "--configs", "configs", *arguments],
            cwd=REPOSITORY,
            env=environment,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self.port = self._bound_port()
        self.base = f"http://127.0.0.1:{self.port}"

    def _bound_port(self) -> int:
        deadline = time.monotonic() + SERVER_START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"tabserver exited with {self.process.returncode}:\n{self.log_path.read_text()}")
            found = re.search(r" on 127\.0\.0\.1:(\d+)", self.log_path.read_text())
            if found:
                return int(found.group(1))
            time.sleep(0.1)
        raise RuntimeError(f"tabserver did not say its port within {SERVER_START_SECONDS} s:\n{self.log_path.read_text()}")

    def request(self, method, path, body=None, headers=None, token=OTHER_TOKEN):
        """One request as the other operator (or with `token=None`, as a client): (status, headers, body bytes)."""
        fields = dict(headers or {})
        if token:
            fields["Authorization"] = f"Bearer {token}"
        request = urllib.request.Request(self.base + path, data=body, method=method, headers=fields)
        try:
            with urllib.request.urlopen(request, timeout=WAIT_SECONDS) as response:
                return response.status, response.headers, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.headers, error.read()

    def layout(self, account):
        status, headers, body = self.request("GET", f"/v1/accounts/{account}/layout")
        assert status == 200, body
        return int(headers["Layout-Version"]), headers["ETag"], body.decode()

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self.log.close()


# MARK: The browser


class Browser:
    """Chromium with the helpers the steps share: waiting (always with a deadline), screenshots, the console log."""

    def __init__(self, base: str):
        options = webdriver.ChromeOptions()
        options.binary_location = os.environ.get("CHROMIUM_BIN", "/usr/bin/chromium")
        for argument in [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--window-size=1440,1400",
            "--lang=en-US",
            "--no-first-run",
            "--disable-extensions",
        ]:
            options.add_argument(argument)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        service = Service(executable_path=os.environ.get("CHROMEDRIVER_BIN", "/usr/bin/chromedriver"))
        self.driver = webdriver.Chrome(service=service, options=options)
        self.driver.set_page_load_timeout(WAIT_SECONDS)
        self.driver.set_script_timeout(WAIT_SECONDS)
        self.base = base
        SHOTS.mkdir(parents=True, exist_ok=True)

    def by_id(self, element_id):
        return self.driver.find_element(By.ID, element_id)

    def until(self, condition, what, timeout=WAIT_SECONDS):
        """Waits until `condition()` is truthy and returns it; fails naming `what` after `timeout` seconds."""
        try:
            return WebDriverWait(self.driver, timeout, poll_frequency=0.1).until(lambda _: condition())
        except TimeoutException:
            status = self.driver.execute_script(
                "return [document.getElementById('status')?.textContent, document.getElementById('alert')?.textContent]"
            )
            raise AssertionError(f"waited {timeout} s for {what}; status and alert say {status}") from None

    def text(self, element_id):
        return self.by_id(element_id).text

    def status(self):
        return self.text("status")

    def screenshot(self, name):
        self.driver.save_screenshot(str(SHOTS / f"{name}.png"))

    def log_problems(self, allowed=()):
        """The console's errors and warnings since the last call, less the failed requests in `allowed`
        (pairs of a path and a status the step provoked on purpose) and the answers that say "none" by design
        (an account that never had a rollout: 404 on `…/layout/rollout`, which the console reads when it opens
        an account)."""
        problems = []
        for entry in self.driver.get_log("browser"):
            if entry["level"] not in ("SEVERE", "WARNING"):
                continue
            failed = re.match(r"(\S+) - Failed to load resource: the server responded with a status of (\d+)", entry["message"])
            if failed:
                path = urllib.parse.urlsplit(failed.group(1)).path
                if (path, int(failed.group(2))) in allowed:
                    continue
                if int(failed.group(2)) == 404 and re.fullmatch(r"/v1/accounts/[^/]+/layout/rollout", path):
                    continue
            problems.append(f"{entry['level']}: {entry['message']}")
        return problems

    def set_selection(self, element, start, end):
        self.driver.execute_script("arguments[0].focus(); arguments[0].setSelectionRange(arguments[1], arguments[2]);", element, start, end)

    def select_text(self, element, needle):
        """Selects the first `needle` in a textarea (so that typing replaces it), as a mouse drag would."""
        value = element.get_property("value")
        start = value.index(needle)
        self.set_selection(element, start, start + len(needle))

    def preview_svg(self, image_id="preview-image"):
        """The picture of the <img> `image_id` (the preview by default), parsed by Python's XML parser (an
        independent check that it is well-formed)."""
        image = self.by_id(image_id)
        self.until(
            lambda: self.driver.execute_script(
                "return arguments[0].getAttribute('src') && arguments[0].complete && arguments[0].naturalWidth > 0;", image
            ),
            f"the image #{image_id} to load",
        )
        source = image.get_attribute("src")
        header, _, payload = source.partition(",")
        assert header.startswith("data:image/svg+xml"), header
        data = base64.b64decode(payload) if header.endswith(";base64") else urllib.parse.unquote(payload).encode()
        return ElementTree.fromstring(data)

    def quit(self):
        self.driver.quit()

def focused(browser) -> str:
    """The id of the element that has the keyboard focus."""
    return browser.driver.execute_script("return document.activeElement ? document.activeElement.id : null;")


def svg_text(root) -> str:
    return " ".join(" ".join(element.itertext()) for element in root.iter(f"{SVG}text"))


def line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


def account_names(browser):
    # Read in one script: the list is re-rendered as pages load, so element handles could go stale between reads.
    return browser.driver.execute_script(
        "return [...document.querySelectorAll('#account-list button')].map((button) => button.dataset.account);"
    )

