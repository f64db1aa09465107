"""The operators' console in a real browser.

Debian's headless Chromium, driven by Selenium through Debian's chromedriver (its path is given, so Selenium
Manager downloads nothing), against a live `tabserver serve --store memory:` on 127.0.0.1 (port 0, the bound
port read back from its log). A second operator writes with urllib in between, as another person would with
curl. The tests run in file order and share one server and one browser: each step starts from what the one
before left, as an operator's session does. The last steps make API tokens on the console's tokens page and use
their secrets with urllib, read the audit page, list webhooks and their deliveries to a receiver on 127.0.0.1 (or
the page's "no webhooks yet" on a server without the routes), and sign in with a read-only token.

Environment: TABSERVER_BIN (required: the tabserver executable), CONSOLE_SCREENSHOTS_DIR (default
/tmp/console-shots), CHROMIUM_BIN (default /usr/bin/chromium), CHROMEDRIVER_BIN (default /usr/bin/chromedriver).
"""

import base64
import http.server
import json
import os
import re
import secrets
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime
from pathlib import Path
from xml.etree import ElementTree

import pytest
from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

REPOSITORY = Path(__file__).resolve().parents[2]
SHOTS = Path(os.environ.get("CONSOLE_SCREENSHOTS_DIR", "/tmp/console-shots"))
SERVER_START_SECONDS = 30
WAIT_SECONDS = 15
SVG = "{http://www.w3.org/2000/svg}"

REQUIRED_CSP = {
    "default-src": "'self'",
    "img-src": "'self' data:",
    "style-src": "'self'",
    "script-src": "'self'",
    "connect-src": "'self'",
    "frame-ancestors": "'none'",
    "base-uri": "'none'",
    "form-action": "'none'",
}

CONSOLE_TOKEN = "console-" + secrets.token_hex(16)
OTHER_TOKEN = "other-" + secrets.token_hex(16)


# MARK: The server


class Server:
    """A `tabserver serve` process on 127.0.0.1 with two operators' tokens (`console` and `other`)."""

    def __init__(self, binary: str, workdir: Path):
        tokens = workdir / "tokens"
        tokens.write_text(f"console:{CONSOLE_TOKEN}\nother:{OTHER_TOKEN}\n")
        self.log_path = workdir / "server.log"
        self.log = self.log_path.open("w")  # closed in stop(), after the process ends
        environment = {k: v for k, v in os.environ.items() if not k.startswith("TABSERVER_")}
        environment["TABSERVER_ADMIN_TOKENS_FILE"] = str(tokens)
        # The webhooks step's receiver is on 127.0.0.1 (a server without webhooks ignores this).
        environment["TABSERVER_WEBHOOK_ALLOW_PRIVATE"] = "1"
        self.process = subprocess.Popen(
            [binary, "serve", "--host", "127.0.0.1", "--port", "0", "--store", "memory:", "--configs", "configs"],
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
        (pairs of a path and a status the step provoked on purpose)."""
        problems = []
        for entry in self.driver.get_log("browser"):
            if entry["level"] not in ("SEVERE", "WARNING"):
                continue
            failed = re.match(r"(\S+) - Failed to load resource: the server responded with a status of (\d+)", entry["message"])
            if failed:
                path = urllib.parse.urlsplit(failed.group(1)).path
                if (path, int(failed.group(2))) in allowed:
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

    def preview_svg(self):
        """The preview <img>'s picture, parsed by Python's XML parser (an independent check that it is well-formed)."""
        image = self.by_id("preview-image")
        self.until(
            lambda: self.driver.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0;", image),
            "the preview image to load",
        )
        source = image.get_attribute("src")
        header, _, payload = source.partition(",")
        assert header.startswith("data:image/svg+xml"), header
        data = base64.b64decode(payload) if header.endswith(";base64") else urllib.parse.unquote(payload).encode()
        return ElementTree.fromstring(data)

    def quit(self):
        self.driver.quit()


@pytest.fixture(scope="module")
def browser(server):
    running = Browser(server.base)
    try:
        yield running
    finally:
        running.quit()


def focused(browser) -> str:
    """The id of the element that has the keyboard focus."""
    return browser.driver.execute_script("return document.activeElement ? document.activeElement.id : null;")


def svg_text(root) -> str:
    return " ".join(" ".join(element.itertext()) for element in root.iter(f"{SVG}text"))


def line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


# MARK: The steps


def test_console_is_served_with_its_security_headers(server):
    status, headers, body = server.request("GET", "/console/", token=None)
    assert status == 200
    assert headers["Content-Type"].startswith("text/html")
    # The page loads its files under names that carry their content's hash, cached for a year (the plain names
    # still answer, revalidated).
    script = re.search(rb'<script type="module" src="(app\.[0-9a-f]{10}\.js)">', body)
    assert script, body[:600]
    status, headers_of_script, _ = server.request("GET", "/console/" + script.group(1).decode(), token=None)
    assert status == 200 and headers_of_script["Cache-Control"] == "public, max-age=31536000, immutable"
    assert headers["Cache-Control"] == "no-cache"
    directives = dict(part.strip().split(" ", 1) for part in headers["Content-Security-Policy"].split(";") if part.strip())
    for name, value in REQUIRED_CSP.items():
        assert directives.get(name) == value, f"CSP {name} is {directives.get(name)!r}"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers.get("Set-Cookie") is None
    for name, kind in [("app.js", "text/javascript"), ("api.js", "text/javascript"), ("console.css", "text/css")]:
        status, headers, _ = server.request("GET", f"/console/{name}", token=None)
        assert status == 200 and headers["Content-Type"].startswith(kind), (name, status, headers["Content-Type"])
        assert headers["X-Content-Type-Options"] == "nosniff"
    assert server.request("GET", "/console/no-such-file.js", token=None)[0] == 404


def test_sign_in_refuses_a_wrong_token_and_keeps_the_right_one_in_session_storage(browser):
    driver = browser.driver
    driver.get(browser.base + "/console/")
    browser.until(lambda: focused(browser) == "token", "focus on the token field")
    token = browser.by_id("token")
    browser.screenshot("01-sign-in")
    token.send_keys("not-the-token", Keys.ENTER)
    browser.until(lambda: "401" in browser.text("alert"), "the refusal to be announced")
    assert not browser.by_id("sign-in").get_property("hidden")
    assert driver.execute_script("return sessionStorage.getItem('tabserver.adminToken')") is None

    token.clear()
    token.send_keys(CONSOLE_TOKEN, Keys.ENTER)
    browser.until(lambda: browser.by_id("workspace").is_displayed(), "the workspace")
    browser.until(lambda: focused(browser) == "search", "focus on the search field")
    assert driver.execute_script("return sessionStorage.getItem('tabserver.adminToken')") == CONSOLE_TOKEN
    assert driver.execute_script("return document.cookie") == ""
    assert driver.get_cookies() == []
    assert browser.by_id("feed-state").get_attribute("data-state") == "listening"
    assert browser.log_problems(allowed={("/v1/accounts", 401)}) == []


def test_every_control_has_a_label_and_every_button_a_name(browser):
    unlabelled = browser.driver.execute_script(
        """
        const missing = [];
        for (const control of document.querySelectorAll("input, select, textarea")) {
          if (control.labels.length === 0 && !control.getAttribute("aria-label")) missing.push(control.id || control.outerHTML);
        }
        for (const button of document.querySelectorAll("button")) {
          if (!(button.textContent.trim() || button.getAttribute("aria-label"))) missing.push(button.id || button.outerHTML);
        }
        for (const region of ["status", "alert"]) {
          const element = document.getElementById(region);
          if (!element.getAttribute("role")) missing.push(region + " has no role");
        }
        return missing;
        """
    )
    assert unlabelled == []


def test_the_feed_parser_reads_event_streams_in_any_chunking(browser):
    # The console's own module, imported in the page: text/event-stream as the HTML standard defines it.
    stream = (
        ': comment\r\nevent: layout\r\nid: 7\r\ndata: {"a":1}\r\n\r\n'
        "data: one\ndata:two\n\nevent: reset\n\nid: 9\rdata: x\r\r"
        ": heartbeat\nid: 12\n\nretry: 2500\n\n"
    )
    events = browser.driver.execute_async_script(
        """
        const [stream, done] = arguments;
        import("./events.js").then(({ EventStreamParser }) => {
          const seen = [];
          const parser = new EventStreamParser((event) => seen.push(event));
          // One character at a time: every line ending is split across chunks somewhere.
          for (const character of stream) parser.push(character);
          done({ seen, lastEventId: parser.lastEventId, retry: parser.retry });
        }, (error) => done(String(error)));
        """,
        stream,
    )
    assert events["seen"] == [
        {"type": "layout", "data": '{"a":1}', "id": "7"},
        {"type": "message", "data": "one\ntwo", "id": "7"},
        {"type": "reset", "data": "", "id": "7"},
        {"type": "message", "data": "x", "id": "9"},
    ]
    # A heartbeat dispatches nothing but moves the position the next request resumes from.
    assert events["lastEventId"] == "12" and events["retry"] == 2500
    assert browser.log_problems() == []


def account_names(browser):
    # Read in one script: the list is re-rendered as pages load, so element handles could go stale between reads.
    return browser.driver.execute_script(
        "return [...document.querySelectorAll('#account-list button')].map((button) => button.dataset.account);"
    )


def test_accounts_are_listed_searched_and_paged(browser):
    # The accounts are configs/layouts/*'s stems, imported at start; the steps below need at least six.
    everyone = sorted({path.stem for path in (REPOSITORY / "configs" / "layouts").iterdir()})
    assert len(everyone) >= 6 and {"jack", "jill", "john"} <= set(everyone), everyone
    with_j = [name for name in everyone if name.startswith("j")]
    with_ji = [name for name in everyone if name.startswith("ji")]
    browser.until(lambda: account_names(browser) == everyone[:20], "the first page (20 by default)")

    Select(browser.by_id("page-size")).select_by_value("5")
    browser.until(lambda: account_names(browser) == everyone[:5], "a page of five")
    assert browser.by_id("page-previous").get_property("disabled")
    browser.by_id("page-next").send_keys(Keys.ENTER)
    browser.until(lambda: account_names(browser) == everyone[5:10], "the second page")
    assert browser.by_id("page-next").get_property("disabled") == (len(everyone) <= 10)
    assert browser.text("page-number") == "Page 2"
    browser.by_id("page-previous").click()
    browser.until(lambda: account_names(browser) == everyone[:5], "the first page again")

    search = browser.by_id("search")
    search.send_keys("j")
    browser.until(lambda: account_names(browser) == with_j[:5], "the accounts that start with j")
    search.send_keys("i")
    browser.until(lambda: account_names(browser) == with_ji[:5], "the accounts that start with ji")
    search.send_keys(Keys.BACKSPACE, Keys.BACKSPACE, "zz")
    browser.until(lambda: browser.by_id("account-empty").is_displayed(), "no account for zz")
    search.send_keys(Keys.BACKSPACE, Keys.BACKSPACE)
    browser.until(lambda: account_names(browser) == everyone[:5], "the first page with no search")
    browser.screenshot("02-accounts")
    assert browser.log_problems() == []


def test_an_account_opens_with_its_tab_bar_drawn_next_to_its_compiled_json(browser, server):
    driver = browser.driver
    driver.find_element(By.CSS_SELECTOR, "#account-list button[data-account='jack']").send_keys(Keys.ENTER)
    browser.until(lambda: browser.text("account-heading") == "jack", "jack's heading")
    browser.until(lambda: focused(browser) == "account-heading", "focus on the account's heading")
    browser.until(lambda: "Opened jack" in browser.status(), "jack to load")

    root = browser.preview_svg()
    assert root.tag == f"{SVG}svg"
    titles = svg_text(root)
    assert "Home" in titles and "Maison" not in titles, titles
    compiled = json.loads(browser.text("compiled-json"))
    assert compiled["layout"] == "jack" and compiled["locale"] == "en"
    _, etag, source = server.layout("jack")
    assert browser.by_id("source").get_property("value") == source
    assert etag in browser.text("source-meta")

    locale = browser.by_id("locale")
    locale.send_keys("fr", Keys.ENTER)
    browser.until(lambda: "Maison" in svg_text(browser.preview_svg()), "the French tab bar")
    browser.until(lambda: json.loads(browser.text("compiled-json"))["locale"] == "fr", "the French compiled JSON")
    browser.screenshot("03-preview")
    Select(browser.by_id("platform")).select_by_value("android")
    browser.until(lambda: "fr, android" in browser.text("preview-caption"), "the preview for Android")
    assert "android" in browser.by_id("preview-image").get_attribute("alt")
    Select(browser.by_id("platform")).select_by_value("")
    locale.clear()
    locale.send_keys(Keys.ENTER)
    browser.until(lambda: "Home" in svg_text(browser.preview_svg()), "the default locale again")
    assert browser.log_problems() == []


def test_validation_errors_are_shown_at_their_line_and_nothing_is_stored(browser, server):
    driver = browser.driver
    editor = browser.by_id("source")
    before = server.layout("jack")
    source = editor.get_property("value")
    broken_line = line_of(source, '"reselect": "none"')
    browser.select_text(editor, '"none"')
    editor.send_keys('"sometimes"')
    browser.by_id("check").click()  # PUT ?dryRun=true
    browser.until(lambda: browser.by_id("source-errors").is_displayed(), "the error list after Check")
    assert f"Line {broken_line}" in browser.text("source-error-list")
    browser.by_id("save").click()

    browser.until(lambda: browser.by_id("source-errors").is_displayed(), "the error list")
    browser.until(lambda: focused(browser) == "source-errors-heading", "focus on the errors")
    assert editor.get_attribute("aria-invalid") == "true"
    marked = [int(line.get_attribute("data-line")) for line in driver.find_elements(By.CSS_SELECTOR, "#gutter .error-line")]
    assert marked == [broken_line], marked
    item = browser.by_id("source-error-list").text
    assert f"Line {broken_line}" in item and "reselect" in item, item
    assert server.layout("jack") == before, "a refused source must store nothing"
    browser.screenshot("04-errors")

    driver.find_element(By.CSS_SELECTOR, f"#source-error-list button[data-line='{broken_line}']").send_keys(Keys.ENTER)
    browser.until(lambda: focused(browser) == "source", "focus in the source")
    selected = driver.execute_script("const t = arguments[0]; return t.value.slice(t.selectionStart, t.selectionEnd);", editor)
    assert '"reselect": "sometimes"' in selected, selected

    browser.by_id("revert").click()
    browser.until(lambda: editor.get_property("value") == before[2], "the edits to be reverted")
    assert not browser.by_id("source-errors").is_displayed()
    assert browser.log_problems(allowed={("/v1/accounts/jack/layout", 422)}) == []


def test_an_edit_is_saved_with_if_match_and_redrawn(browser, server):
    driver = browser.driver
    editor = browser.by_id("source")
    browser.select_text(editor, '"News"')
    editor.send_keys('"Headlines"')
    browser.by_id("preview-edits").click()  # POST /v1/preview: drawn, not stored
    browser.until(lambda: "Unsaved edits" in browser.text("preview-caption"), "the preview of the unsaved edits")
    assert "Headlines" in svg_text(browser.preview_svg())
    assert server.layout("jack")[0] == 1
    browser.by_id("change-message").send_keys("rename News")
    editor.send_keys(Keys.CONTROL, "s")

    browser.until(lambda: "Saved version 2 of jack" in browser.status(), "the save")
    version, etag, source = server.layout("jack")
    assert version == 2 and '"Headlines"' in source
    assert etag in browser.text("source-meta")
    browser.until(lambda: "Headlines" in svg_text(browser.preview_svg()), "the new title in the tab bar")
    browser.until(lambda: driver.find_elements(By.CSS_SELECTOR, "#history-rows tr[data-version='2']"), "version 2 in the history")
    status, _, body = server.request("GET", "/v1/accounts/jack/layout/versions")
    assert status == 200, body
    newest = json.loads(body)["versions"][0]
    assert newest["version"] == 2 and newest["author"] == "console" and newest["message"] == "rename News"
    # The console's own change comes back through the feed, marked as its own.
    browser.until(
        lambda: driver.find_elements(By.CSS_SELECTOR, "#feed-list li.mine[data-account='jack'][data-version='2']"),
        "the console's own save in the change feed",
    )
    assert browser.log_problems() == []


def test_another_operators_change_appears_live_and_a_conflicting_save_shows_the_diff(browser, server):
    driver = browser.driver
    editor = browser.by_id("source")
    browser.select_text(editor, '"Profile"')
    editor.send_keys('"Me"')

    version, etag, source = server.layout("jack")
    status, _, body = server.request(
        "PUT",
        "/v1/accounts/jack/layout",
        source.replace('"Headlines"', '"Stories"').encode(),
        {"Content-Type": "application/json", "If-Match": etag, "Change-Message": "stories, not headlines"},
    )
    assert status == 200, body
    assert json.loads(body)["version"] == 3

    entry = browser.until(
        lambda: driver.find_elements(By.CSS_SELECTOR, "#feed-list li.others[data-account='jack'][data-version='3']"),
        "the other operator's change in the live feed",
    )
    assert "by other" in entry[0].text
    browser.until(lambda: browser.by_id("remote-change").is_displayed(), "the notice that jack changed while editing")
    assert '"Me"' in editor.get_property("value"), "a change by someone else must not overwrite unsaved edits"

    browser.by_id("save").click()
    browser.until(lambda: browser.by_id("conflict").is_displayed(), "the conflict")
    browser.until(lambda: focused(browser) == "conflict-heading", "focus on the conflict")
    diff = browser.text("conflict-diff")
    assert "from version 2 to version 3" in diff and "Stories" in diff and "Headlines" in diff and "news" in diff, diff
    assert server.layout("jack")[0] == 3, "a refused save must store nothing"
    browser.screenshot("05-conflict")

    browser.by_id("conflict-overwrite").click()
    browser.until(lambda: "Saved version 4 of jack" in browser.status(), "the save over version 3")
    assert not browser.by_id("conflict").is_displayed()
    version, _, source = server.layout("jack")
    assert version == 4 and '"Me"' in source and '"Headlines"' in source and '"Stories"' not in source
    assert browser.log_problems(allowed={("/v1/accounts/jack/layout", 412)}) == []


def test_history_shows_each_versions_changes_and_restores_an_old_one(browser, server):
    driver = browser.driver
    browser.until(lambda: driver.find_elements(By.CSS_SELECTOR, "#history-rows tr[data-version='4']"), "version 4 in the history")
    driver.find_element(By.CSS_SELECTOR, "button[aria-label='Changes in version 4']").send_keys(Keys.ENTER)
    browser.until(lambda: browser.by_id("history-diff").is_displayed(), "the diff of version 4")
    assert browser.text("history-diff-heading") == "Changes from version 3 to version 4"
    browser.until(lambda: focused(browser) == "history-diff-heading", "focus on the diff")
    diff = browser.text("history-diff-body")
    assert "Stories" in diff and "Headlines" in diff and "Me" in diff and "Profile" in diff, diff

    driver.find_element(By.CSS_SELECTOR, "button[aria-label='Restore version 1']").send_keys(Keys.ENTER)
    browser.until(lambda: "Restored version 1 as version 5" in browser.status(), "the restore")
    version, _, source = server.layout("jack")
    first = server.request("GET", "/v1/accounts/jack/layout/versions/1")[2].decode()
    assert version == 5 and source == first
    assert browser.by_id("source").get_property("value") == first
    newest = json.loads(server.request("GET", "/v1/accounts/jack/layout/versions")[2])["versions"][0]
    assert newest["restoredFrom"] == 1 and newest["author"] == "console"
    browser.until(lambda: "News" in svg_text(browser.preview_svg()), "the restored title in the tab bar")
    browser.until(lambda: driver.find_elements(By.CSS_SELECTOR, "#history-rows tr[data-version='5']"), "version 5 in the history")
    assert "(current)" in driver.find_element(By.CSS_SELECTOR, "#history-rows tr[data-version='5'] th").text
    browser.until(
        lambda: driver.find_elements(By.CSS_SELECTOR, "#feed-list li.mine[data-account='jack'][data-version='5']"),
        "the restore in the change feed",
    )
    feed = [
        (item.get_attribute("data-version"), item.get_attribute("class"))
        for item in driver.find_elements(By.CSS_SELECTOR, "#feed-list li[data-account='jack']")
    ]
    assert feed == [("5", "mine"), ("4", "mine"), ("3", "others"), ("2", "mine")], "every version once, newest first"
    browser.until(
        lambda: "version 5" in driver.find_element(By.CSS_SELECTOR, "#account-list button[data-account='jack']").text,
        "the account list to show version 5",
    )
    browser.screenshot("06-history")
    driver.execute_script("window.scrollTo(0, 0)")
    browser.screenshot("07-after-restore")
    assert browser.log_problems() == []


def test_a_reload_keeps_the_session_and_signing_out_forgets_the_token(browser):
    driver = browser.driver
    driver.refresh()
    browser.until(lambda: browser.by_id("workspace").is_displayed(), "the workspace after a reload, without signing in again")
    browser.until(lambda: "jack" in account_names(browser), "the accounts after a reload")
    browser.by_id("sign-out").send_keys(Keys.ENTER)
    browser.until(lambda: browser.by_id("sign-in").is_displayed(), "the sign-in form")
    assert not browser.by_id("workspace").is_displayed()
    assert driver.execute_script("return sessionStorage.getItem('tabserver.adminToken')") is None
    assert browser.by_id("feed-state").get_attribute("data-state") == "stopped"
    browser.until(lambda: focused(browser) == "token", "focus on the token field")
    driver.refresh()
    browser.until(lambda: browser.by_id("sign-in").is_displayed(), "the sign-in form after a reload")
    assert not browser.by_id("workspace").is_displayed()
    assert browser.log_problems() == []


# MARK: Tokens, audit and webhooks (API.md "Tokens, scopes and audit" and "Webhooks")


def sign_in(browser, token):
    """Signs in from the sign-in form with `token` and waits for the workspace and the token's abilities."""
    browser.driver.get(browser.base + "/console/")
    browser.until(lambda: browser.by_id("sign-in").is_displayed(), "the sign-in form")
    browser.by_id("token").send_keys(token, Keys.ENTER)
    browser.until(lambda: browser.by_id("workspace").is_displayed(), "the workspace")
    browser.until(lambda: browser.text("who").startswith("Signed in with"), "the token's abilities")


def open_page(browser, page):
    browser.driver.find_element(By.CSS_SELECTOR, f"#pages button[data-page='{page}']").click()
    browser.until(lambda: browser.by_id(page).is_displayed(), f"the {page}")


def token_row(browser, name):
    rows = browser.driver.find_elements(By.CSS_SELECTOR, f"#token-rows tr[data-name='{name}']")
    return rows[0] if rows else None


def cells(row):
    return [element.text for element in row.find_elements(By.CSS_SELECTOR, "th, td")]


def as_token(server, secret, method, path, body=None, headers=None):
    return server.request(method, path, body, headers, token=secret)


def test_the_tokens_page_makes_a_token_whose_secret_works_within_its_scope_only(browser, server):
    driver = browser.driver
    sign_in(browser, CONSOLE_TOKEN)
    assert browser.text("who") == "Signed in with an admin token"
    open_page(browser, "tokens-page")
    browser.until(lambda: browser.by_id("token-empty").is_displayed(), "no API token yet")

    browser.by_id("token-name").send_keys("ci-jack")
    driver.find_element(By.CSS_SELECTOR, "#token-form input[name='scopes'][value='write']").click()
    browser.by_id("token-accounts").send_keys("jack")
    browser.by_id("token-create").click()
    browser.until(lambda: browser.by_id("token-secret").is_displayed(), "the new secret")
    browser.until(lambda: focused(browser) == "token-secret-heading", "focus on the secret")
    secret = browser.text("token-secret-value")
    assert re.fullmatch(r"tsk_[A-Za-z0-9_-]{40,}", secret), secret
    assert "not shown again" in browser.text("token-secret-heading")

    # The copy button puts exactly the secret on the clipboard (read back through the Clipboard API).
    driver.execute_cdp_cmd(
        "Browser.grantPermissions", {"origin": browser.base, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]}
    )
    browser.by_id("token-secret-copy").click()
    browser.until(lambda: browser.status() == "The secret was copied.", "the copy")
    copied = driver.execute_async_script("navigator.clipboard.readText().then(arguments[0], (e) => arguments[0]('failed: ' + e));")
    assert copied == secret
    browser.screenshot("08-token-made")

    # The secret, used as a CI job would: its account yes, others and the token routes no.
    status, _, body = as_token(server, secret, "GET", "/v1/accounts/jack/layout")
    assert status == 200, body
    version, etag, source = server.layout("jack")
    status, _, body = as_token(
        server, secret, "PUT", "/v1/accounts/jack/layout", source.encode(), {"Content-Type": "application/json", "If-Match": etag}
    )
    assert status == 200 and json.loads(body)["version"] == version + 1, body
    for method, path in [("GET", "/v1/accounts/jill/layout"), ("GET", "/v1/tokens")]:
        status, headers, body = as_token(server, secret, method, path)
        assert status == 403, (path, status, body)
        assert 'error="insufficient_scope"' in headers["WWW-Authenticate"], headers["WWW-Authenticate"]

    row = token_row(browser, "ci-jack")
    assert row is not None
    assert cells(row)[:4] == ["ci-jack", "read, write", "jack", "all"], cells(row)
    # Its use shows as "last used" once the server has noted it.
    def last_used():
        browser.by_id("token-reload").click()
        row = token_row(browser, "ci-jack")
        return row is not None and cells(row)[6] not in ("never", "")

    browser.until(last_used, "the token's last use in the list")
    browser.by_id("token-secret-done").click()
    assert not browser.by_id("token-secret").is_displayed() and browser.text("token-secret-value") == ""
    assert browser.log_problems() == []


def test_a_refused_token_form_lists_the_servers_problems_and_makes_nothing(browser, server):
    driver = browser.driver
    before = json.loads(server.request("GET", "/v1/tokens")[2])["tokens"]
    driver.find_element(By.CSS_SELECTOR, "#token-form input[name='scopes'][value='read']").click()  # no scope left
    browser.by_id("token-accounts").send_keys("shop-[a]")
    browser.by_id("token-create").click()
    browser.until(lambda: browser.by_id("token-errors").is_displayed(), "the refusal's problems")
    problems = browser.text("token-error-list")
    assert "/name" in problems and "/scopes" in problems and "/accounts/0" in problems, problems
    assert json.loads(server.request("GET", "/v1/tokens")[2])["tokens"] == before
    driver.find_element(By.CSS_SELECTOR, "#token-form input[name='scopes'][value='read']").click()
    browser.by_id("token-accounts").clear()
    assert browser.log_problems(allowed={("/v1/tokens", 422)}) == []


def test_an_expiry_is_sent_as_rfc_3339_and_names_are_shown_as_text(browser, server):
    driver = browser.driver
    hostile = '<img src=x onerror="document.title=1">'
    browser.by_id("token-name").send_keys(hostile)
    expires = browser.by_id("token-expires")
    # A datetime-local field's keyboard order depends on the locale; the value is set as a picker would set it.
    driver.execute_script("arguments[0].value = '2099-01-02T03:04'; arguments[0].dispatchEvent(new Event('input'));", expires)
    browser.by_id("token-create").click()
    browser.until(lambda: browser.by_id("token-secret").is_displayed(), "the new secret")
    listed = [token for token in json.loads(server.request("GET", "/v1/tokens")[2])["tokens"] if token["name"] == hostile]
    assert len(listed) == 1, listed
    meant = driver.execute_script("return new Date('2099-01-02T03:04').getTime();")
    stored = listed[0]["expiresAt"].replace("Z", "+00:00")
    assert datetime.fromisoformat(stored).timestamp() * 1000 == meant, (stored, meant)
    row = browser.until(lambda: token_row(browser, hostile), "the token listed under its name")
    assert cells(row)[0] == hostile and cells(row)[5] != "never"
    assert driver.find_elements(By.CSS_SELECTOR, "#token-rows img") == [] and driver.title == "TabServer console"
    browser.by_id("token-secret-done").click()
    assert browser.log_problems() == []


def test_rotating_keeps_the_old_secret_for_its_overlap_and_revoking_refuses_both(browser, server):
    driver = browser.driver
    browser.by_id("token-name").send_keys("dashboard-rotated")
    browser.by_id("token-create").click()
    browser.until(lambda: "dashboard-rotated was made" in browser.text("token-secret-heading"), "the new secret")
    old = browser.text("token-secret-value")
    assert as_token(server, old, "GET", "/v1/accounts/jack/layout")[0] == 200

    assert Select(browser.by_id("token-overlap")).first_selected_option.get_attribute("value") == "PT1H"
    browser.until(lambda: token_row(browser, "dashboard-rotated"), "the token in the list")
    driver.find_element(By.CSS_SELECTOR, "button[aria-label='Rotate dashboard-rotated']").click()
    browser.until(lambda: "has a new secret" in browser.text("token-secret-heading"), "the rotated secret")
    new = browser.text("token-secret-value")
    assert new != old and new.startswith("tsk_")
    assert "1 hour" in browser.text("token-secret-heading")
    assert as_token(server, new, "GET", "/v1/accounts/jack/layout")[0] == 200
    assert as_token(server, old, "GET", "/v1/accounts/jack/layout")[0] == 200, "the old secret holds for the overlap"

    driver.find_element(By.CSS_SELECTOR, "button[aria-label='Revoke dashboard-rotated']").click()
    WebDriverWait(driver, WAIT_SECONDS).until(lambda d: d.switch_to.alert).accept()
    browser.until(lambda: browser.status() == "Revoked dashboard-rotated.", "the revocation")
    row = token_row(browser, "dashboard-rotated")
    assert row.get_attribute("data-state") == "revoked" and not row.find_elements(By.CSS_SELECTOR, "button")
    for secret in (new, old):
        status, headers, _ = as_token(server, secret, "GET", "/v1/accounts/jack/layout")
        assert status == 401 and 'error="invalid_token"' in headers["WWW-Authenticate"], (status, headers)
    browser.screenshot("09-tokens")
    assert browser.log_problems() == []


def audit_ids(server, **filters):
    """Every audit entry's id for `filters`, read from the API a page at a time."""
    ids, after = [], ""
    while True:
        query = urllib.parse.urlencode({**filters, "limit": 1000, **({"after": after} if after else {})})
        status, _, body = server.request("GET", f"/v1/audit?{query}")
        assert status == 200, body
        page = json.loads(body)
        ids += [str(entry["id"]) for entry in page["entries"]]
        if not page["next"]:
            return ids
        after = page["next"]


def audit_rows(browser):
    return browser.driver.execute_script(
        "return [...document.querySelectorAll('#audit-rows tr')].map((row) => [row.dataset.entryId, row.textContent]);"
    )


def test_the_audit_page_shows_the_writes_made_pages_through_next_and_filters(browser, server):
    _, _, source = server.layout("jack")
    for number in range(21):
        status, _, body = server.request(
            "PUT", f"/v1/accounts/audit-{number:02}/layout", source.encode(), {"Content-Type": "application/json"}
        )
        assert status == 201, body
    open_page(browser, "audit-page")
    browser.by_id("audit-actor").send_keys("other")
    Select(browser.by_id("audit-page-size")).select_by_value("20")
    browser.by_id("audit-apply").click()
    expected = audit_ids(server, actor="other")
    assert len(expected) > 20, expected
    browser.until(lambda: [entry_id for entry_id, _ in audit_rows(browser)] == expected[:20], "the first 20 entries by other")
    browser.by_id("audit-next").click()
    browser.until(lambda: [entry_id for entry_id, _ in audit_rows(browser)] == expected[20:40], "the next page")
    assert browser.text("audit-page-number") == "Page 2"

    browser.by_id("audit-account").send_keys("jack")
    browser.by_id("audit-apply").click()
    expected = audit_ids(server, actor="other", account="jack")
    browser.until(lambda: [entry_id for entry_id, _ in audit_rows(browser)] == expected, "other's entries on jack")
    texts = [text for _, text in audit_rows(browser)]
    assert any("PUT /v1/accounts/jack/layout" in text and text.endswith("200") for text in texts), texts

    # The token made on the tokens page: its write and its refusals, under its own name.
    browser.by_id("audit-actor").clear()
    browser.by_id("audit-account").clear()
    browser.by_id("audit-actor").send_keys("ci-jack")
    browser.by_id("audit-apply").click()
    browser.until(lambda: len(audit_rows(browser)) >= 2, "ci-jack's entries")
    texts = [text for _, text in audit_rows(browser)]
    assert any("PUT /v1/accounts/jack/layout" in text and text.endswith("200") for text in texts), texts
    assert any("/v1/accounts/jill/layout" in text and text.endswith("403") for text in texts), texts
    browser.screenshot("10-audit")
    assert browser.log_problems() == []


class Receiver:
    """A webhook receiver on 127.0.0.1 that answers 204 to every POST and keeps the `webhook-id`s it got."""

    def __init__(self):
        received = self.received = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                received.append(self.headers.get("webhook-id"))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *arguments):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def test_the_webhooks_page_lists_webhooks_and_their_deliveries_or_says_there_are_none_yet(browser, server):
    driver = browser.driver
    routes = server.request("GET", "/v1/webhooks")[0]
    open_page(browser, "webhooks-page")
    if routes == 404:
        browser.until(lambda: "has no webhooks yet" in browser.text("webhook-summary"), "the page to say so")
        assert not browser.by_id("webhook-table").is_displayed()
        assert browser.log_problems(allowed={("/v1/webhooks", 404)}) == []
        return
    receiver = Receiver()
    try:
        status, _, body = server.request(
            "POST",
            "/v1/webhooks",
            json.dumps({"url": receiver.url, "events": ["layout"]}).encode(),
            {"Content-Type": "application/json"},
        )
        assert status == 201, body
        webhook = json.loads(body)
        _, _, source = server.layout("jack")
        status, _, body = server.request(
            "PUT", "/v1/accounts/hooked/layout", source.encode(), {"Content-Type": "application/json"}
        )
        assert status == 201, body

        browser.by_id("webhook-reload").click()
        selector = f"#webhook-rows tr[data-webhook-id='{webhook['id']}']"
        row = browser.until(lambda: driver.find_elements(By.CSS_SELECTOR, selector), "the webhook")[0]
        assert receiver.url in row.text and "layout" in row.text and "active" in row.text, row.text
        browser.until(lambda: receiver.received, "the delivery at the receiver")

        def delivered():
            driver.find_element(By.CSS_SELECTOR, f"{selector} button").click()
            return driver.find_elements(By.CSS_SELECTOR, "#delivery-rows tr[data-state='delivered']")

        browser.until(delivered, "the delivery listed as delivered")
        assert browser.by_id("deliveries").is_displayed()
        assert "layout.published" in browser.text("delivery-rows")
        first = receiver.received[0]
        driver.find_element(By.CSS_SELECTOR, "#delivery-rows button[aria-label^='Redeliver']").click()
        browser.until(lambda: "is sent again now" in browser.status(), "the redelivery")
        browser.until(lambda: len(receiver.received) == 2, "the redelivery at the receiver")
        assert receiver.received[1] == first, "a redelivery keeps its webhook-id"
        browser.screenshot("11-webhooks")
        assert browser.log_problems() == []
    finally:
        receiver.stop()


def test_a_read_only_tokens_console_shows_no_write_buttons(browser, server):
    driver = browser.driver
    status, _, body = server.request(
        "POST", "/v1/tokens", json.dumps({"name": "dashboard", "scopes": ["read"]}).encode(), {"Content-Type": "application/json"}
    )
    assert status == 201, body
    secret = json.loads(body)["token"]
    browser.by_id("sign-out").click()
    browser.until(lambda: browser.by_id("sign-in").is_displayed(), "the sign-in form")
    sign_in(browser, secret)
    assert browser.text("who") == "Signed in with a read-only token"

    browser.by_id("search").send_keys("jack")
    browser.until(lambda: account_names(browser) == ["jack"], "jack found by the search")
    driver.find_element(By.CSS_SELECTOR, "#account-list button[data-account='jack']").send_keys(Keys.ENTER)
    browser.until(lambda: "Opened jack" in browser.status(), "jack to load")
    browser.until(lambda: driver.find_elements(By.CSS_SELECTOR, "#history-rows tr[data-version='1']"), "jack's history")
    assert browser.by_id("source").get_property("readOnly")
    hidden = ["check", "preview-edits", "save", "revert", "change-message", "conflict-overwrite"]
    assert [name for name in hidden if browser.by_id(name).is_displayed()] == []
    restores = driver.find_elements(By.CSS_SELECTOR, "#history-rows button[aria-label^='Restore version']")
    assert restores and not any(button.is_displayed() for button in restores)
    assert [button.text for button in driver.find_elements(By.CSS_SELECTOR, "#pages button") if button.is_displayed()] == ["Layouts", "Audit"]
    # What it may read still works: the audit page lists entries for it.
    open_page(browser, "audit-page")
    browser.until(lambda: len(audit_rows(browser)) > 0, "audit entries for a read token")
    assert [element.text for element in driver.find_elements(By.CSS_SELECTOR, "button") if element.is_displayed() and element.text in ("Save", "Revoke", "Rotate", "Make the token", "Redeliver")] == []
    browser.screenshot("12-read-only")
    assert browser.log_problems(allowed={("/v1/tokens", 403), ("/v1/validate", 403)}) == []
