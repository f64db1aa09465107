"""The operators' console in a real browser: signing in, accounts, preview, editing, conflicts, history.

A second operator writes with urllib in between, as another person would with curl. The tests run in file order
and share one server and one browser (conftest.py, console_harness.py): each step starts from what the one before
left, as an operator's session does.
"""

import json
import re

from console_harness import CONSOLE_TOKEN, REPOSITORY, SVG, account_names, focused, line_of, svg_text
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

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

