"""The change requests page in a real browser (docs/change-requests.md) on a server whose production needs one approval (`--require-approval production`): a
save held for review (202), its author's view, a reviewer's (the diff, both tab bars for each platform and locale,
approve and apply from the page, and the phones' tab bar changing), and a read-only token's, which gets no button.
Each step is checked against the API with urllib. Its own server (this module's `server` fixture) and browser.
"""

import base64
import json
import os
import tempfile
import urllib.parse
from pathlib import Path
from xml.etree import ElementTree

import pytest
from console_harness import CONSOLE_TOKEN, Server, svg_text
from selenium.webdriver.common.by import By
from test_console_access import open_page
from test_console_rollout import open_account, sign_in


@pytest.fixture(scope="module")
def server():
    with tempfile.TemporaryDirectory(prefix="console-review-") as workdir:
        running = Server(os.environ["TABSERVER_BIN"], Path(workdir), ["--require-approval", "production"])
        try:
            yield running
        finally:
            running.stop()


def make_token_spec(server, spec):
    status, _, body = server.request("POST", "/v1/tokens", json.dumps(spec).encode(), {"Content-Type": "application/json"})
    assert status == 201, body
    return json.loads(body)["token"]


def make_token(server, name, scopes):
    return make_token_spec(server, {"name": name, "scopes": scopes})


def requests_in(server, state):
    status, _, body = server.request("GET", f"/v1/change-requests?state={state}")
    assert status == 200, body
    return json.loads(body)["changeRequests"]


def phones_get(server, account="jack"):
    status, _, body = server.request("GET", f"/v1/accounts/{account}/tabs", token=None)
    assert status == 200, body
    return json.loads(body)


def titles(layout):
    """The titles of the tabs a phone shows in its bar (More's are listed under it)."""
    return [tab["title"] for tab in layout["tabs"]]


def buttons(browser, request_id):
    return browser.driver.execute_script(
        "return [...document.querySelectorAll(`#change-list li[data-change-request='${arguments[0]}'] .change-actions button`)]"
        ".filter((b) => b.offsetParent !== null).map((b) => b.textContent);",
        request_id,
    )


def drawings(browser, request_id):
    """Each drawn pair of the request: (its platforms, its locales, now's SVG root, after's SVG root)."""
    pairs = browser.driver.execute_script(
        """
        return [...document.querySelectorAll(`#change-list li[data-change-request='${arguments[0]}'] .bar-pair`)].map((pair) => [
          pair.dataset.platforms, pair.dataset.locales,
          pair.querySelector("figure[data-arm='now'] img").getAttribute('src'),
          pair.querySelector("figure[data-arm='after'] img").getAttribute('src')]);
        """,
        request_id,
    )

    def parse(source):
        header, _, payload = source.partition(",")
        assert header == "data:image/svg+xml;base64", header
        return ElementTree.fromstring(base64.b64decode(payload))

    return [(platforms.split(), locales.split(), parse(now), parse(after)) for platforms, locales, now, after in pairs]


def test_a_held_save_is_a_change_request_its_author_may_cancel_but_not_approve(browser, server):
    sign_in(browser, CONSOLE_TOKEN)
    open_account(browser, "jack")
    editor = browser.by_id("source")
    browser.select_text(editor, '"title": "News"')
    editor.send_keys('"title": "Stories"')
    browser.by_id("change-message").send_keys("Stories instead of News")
    browser.by_id("save").click()
    browser.until(lambda: "held for review" in browser.status(), "the save held for review")
    assert "waits for 1 approval" in browser.status() and "Clients still get version 1" in browser.status()

    held = requests_in(server, "open")
    assert len(held) == 1, held
    request = held[0]
    assert (request["author"], request["account"], request["environment"], request["version"]) == ("console", "jack", "production", 2)
    assert request["id"] in browser.status() and request["id"] in browser.text("source-meta")
    layout = phones_get(server)
    assert layout["version"] == 1 and "News" in titles(layout) and "Stories" not in titles(layout)

    open_page(browser, "changes-page")
    selector = f"#change-list li[data-change-request='{request['id']}']"
    browser.until(lambda: browser.driver.find_elements(By.CSS_SELECTOR, selector), "the request listed")
    # Its author (an admin) may cancel or reject it, never approve it; nothing to apply before an approval.
    assert buttons(browser, request["id"]) == ["Cancel", "Reject"], buttons(browser, request["id"])
    assert browser.text("changes-summary") == "1 change request waiting, oldest first."
    assert browser.log_problems() == []


def test_a_reviewer_sees_the_diff_and_both_tab_bars_approves_applies_and_phones_get_it(browser, server):
    driver = browser.driver
    request = requests_in(server, "open")[0]
    reviewer = make_token(server, "reviewer", ["approve", "write"])
    browser.by_id("sign-out").click()
    browser.until(lambda: browser.by_id("sign-in").is_displayed(), "the sign-in form")
    sign_in(browser, reviewer)
    assert browser.text("who") == "Signed in with a token that may read, write and approve"
    open_page(browser, "changes-page")
    item = f"#change-list li[data-change-request='{request['id']}']"
    browser.until(lambda: driver.find_elements(By.CSS_SELECTOR, f"{item} .bar-pair"), "the tab bars drawn")

    # The tab-level diff against what production serves (version 1).
    rows = driver.execute_script(
        f"return [...document.querySelectorAll(\"{item} table.diff tbody tr\")].map((row) => row.innerText.split('\\t'));"
    )
    assert rows == [["Changed", "news", "/tabs/3/title", '"News"', '"Stories"']], rows
    caption = driver.find_element(By.CSS_SELECTOR, f"{item} table.diff caption").text
    assert caption == "1 change from version 1 to version 2", caption

    # Both tab bars, for every platform and each of jack's locales (nothing is targeted: every platform changes).
    pairs = drawings(browser, request["id"])
    assert sorted(locale for _, locales, _, _ in pairs for locale in locales) == ["en", "fr"], pairs
    for platforms, _, now, after in pairs:
        assert platforms == ["iphone", "ipad", "mac", "tv", "vision", "android"]
        assert "News" in svg_text(now) and "Stories" not in svg_text(now)
        assert "Stories" in svg_text(after) and "News" not in svg_text(after)
    french = next(after for _, locales, _, after in pairs if locales == ["fr"])
    assert "Maison" in svg_text(french)
    assert "every platform · fr" in driver.find_element(By.CSS_SELECTOR, f"{item} .bar-pair[data-locales='fr'] .bar-pair-caption").text
    browser.screenshot("33-change-request")

    # Approve from the page: with the one approval production needs, it is approved, and Apply appears.
    assert buttons(browser, request["id"]) == ["Approve", "Reject"], buttons(browser, request["id"])
    driver.find_element(By.CSS_SELECTOR, f"{item} button[aria-label='Approve {request['id']}']").click()
    browser.until(lambda: f"Approved change request {request['id']} (approved)" in browser.status(), "the approval")
    approved = requests_in(server, "approved")
    assert [entry["id"] for entry in approved] == [request["id"]] and approved[0]["approvals"][0]["by"] == "reviewer", approved
    assert phones_get(server)["version"] == 1, "approved is not applied"
    browser.until(lambda: "Apply" in buttons(browser, request["id"]), "the apply button")
    assert "reviewer" in driver.find_element(By.CSS_SELECTOR, f"{item} dd[data-field='approvals']").text

    driver.find_element(By.CSS_SELECTOR, f"{item} button[aria-label='Apply {request['id']}']").click()
    browser.until(lambda: f"Applied change request {request['id']} (applied)" in browser.status(), "the change applied")
    browser.until(lambda: not driver.find_elements(By.CSS_SELECTOR, item), "the request gone from the waiting list")
    assert requests_in(server, "applied")[0]["id"] == request["id"]

    # The phones' tab bar changed: the client plane answers the new version, and the console draws it so.
    layout = phones_get(server)
    assert layout["version"] == 3 and "Stories" in titles(layout) and "News" not in titles(layout), layout
    open_page(browser, "workspace")
    open_account(browser, "jack")
    browser.until(lambda: "Stories" in svg_text(browser.preview_svg()), "the applied change in the preview")
    assert browser.log_problems() == []


def test_a_read_only_token_sees_a_request_drawn_and_no_button(browser, server):
    version, etag, source = server.layout("jack")
    status, _, body = server.request(
        "PUT",
        "/v1/accounts/jack/layout",
        source.replace('"title": "Profile"', '"title": "Account"').encode(),
        {"Content-Type": "application/json", "If-Match": etag},
    )
    assert status == 202, body
    held = json.loads(body)["changeRequest"]
    viewer = make_token(server, "viewer", ["read"])
    browser.by_id("sign-out").click()
    browser.until(lambda: browser.by_id("sign-in").is_displayed(), "the sign-in form")
    sign_in(browser, viewer)
    assert browser.text("who") == "Signed in with a read-only token"
    open_page(browser, "changes-page")
    item = f"#change-list li[data-change-request='{held['id']}']"
    browser.until(lambda: browser.driver.find_elements(By.CSS_SELECTOR, f"{item} .bar-pair"), "the request drawn")
    assert buttons(browser, held["id"]) == []
    assert browser.driver.find_elements(By.CSS_SELECTOR, f"{item} .change-actions input") == []
    assert browser.driver.find_element(By.CSS_SELECTOR, f"{item} .change-actions").text == "This token may not review or apply it."
    # Profile is under More on a phone (jack shows 4 tabs and More): the drawn bar does not change, and the page says so.
    heading = browser.driver.find_element(By.CSS_SELECTOR, f"{item} .change-bars h4").text
    assert heading.startswith("Nothing the tab bar shows changes"), heading
    # The API refuses what the page does not offer.
    status, _, _ = server.request("POST", f"/v1/change-requests/{urllib.parse.quote(held['id'])}/approve", token=viewer)
    assert status == 403
    assert server.layout("jack")[:2] == (version, etag)
    browser.screenshot("34-change-request-read-only")
    assert browser.log_problems() == []


def test_a_change_for_one_platform_is_drawn_for_that_platform_only(browser, server):
    # ikhoyo's iPad bar gets a tab of its own; the phones' bars stay as they are.
    _, etag, source = server.layout("ikhoyo")
    layout = json.loads(source)
    layout["tabs"].append({"id": "sketch", "title": "Sketch", "rootViewController": "SketchViewController", "platforms": ["ipad"]})
    status, _, body = server.request(
        "PUT", "/v1/accounts/ikhoyo/layout", json.dumps(layout).encode(), {"Content-Type": "application/json", "If-Match": etag}
    )
    assert status == 202, body
    held = json.loads(body)["changeRequest"]
    # The page is open: the change feed's `event: change-request` lists it (the page may be drawn twice meanwhile,
    # so the drawings are read in one script once there are some).
    item = f"#change-list li[data-change-request='{held['id']}']"
    pairs = browser.until(lambda: drawings(browser, held["id"]), "the request listed and drawn from the change feed")
    assert pairs and all(platforms == ["ipad"] for platforms, _, _, _ in pairs), [(p, l) for p, l, _, _ in pairs]
    assert sorted(locale for _, locales, _, _ in pairs for locale in locales) == ["en", "fr"]
    for _, _, now, after in pairs:
        assert "Sketch" in svg_text(after) and "Sketch" not in svg_text(now)
    heading = browser.driver.find_element(By.CSS_SELECTOR, f"{item} .change-bars h4").text
    assert heading == "The tab bar changes for 2 of 12 platform and locale pairs", heading
    captions = [element.text for element in browser.driver.find_elements(By.CSS_SELECTOR, f"{item} .bar-pair-caption")]
    assert sorted(captions) == ["iPad · en", "iPad · fr"], captions
    assert browser.log_problems() == []


def test_a_rollout_started_from_the_panel_is_held_and_listed_with_its_candidate(browser, server):
    browser.by_id("sign-out").click()
    browser.until(lambda: browser.by_id("sign-in").is_displayed(), "the sign-in form")
    sign_in(browser, CONSOLE_TOKEN)
    open_account(browser, "nine")
    editor = browser.by_id("source")
    browser.select_text(editor, '"title": "Home"')  # nine's first tab: nine tabs, all of them in the bar
    editor.send_keys('"title": "Start"')
    browser.by_id("save-draft").click()  # drafts are never held
    browser.until(lambda: "Saved draft version 2 of nine" in browser.status(), "the draft")
    browser.by_id("rollout-start-percent").send_keys("10")
    browser.by_id("rollout-start-button").click()
    browser.until(lambda: "The rollout of version 2 is held for review" in browser.status(), "the start held")
    assert server.request("GET", "/v1/accounts/nine/layout/rollout")[0] == 404, "no rollout started"
    held = [entry for entry in requests_in(server, "open") if entry["action"] == "rollout.start"]
    assert len(held) == 1 and held[0]["version"] == 2 and held[0]["account"] == "nine", held
    assert held[0]["id"] in browser.status()

    open_page(browser, "changes-page")
    pairs = browser.until(lambda: drawings(browser, held[0]["id"]), "the held rollout drawn")
    assert all("Start" in svg_text(after) and "Start" not in svg_text(now) for _, _, now, after in pairs)
    item = f"#change-list li[data-change-request='{held[0]['id']}']"
    assert "nine in production: rollout.start" == browser.driver.find_element(By.CSS_SELECTOR, f"{item} h3").text
    caption = browser.driver.find_element(By.CSS_SELECTOR, f"{item} table.diff caption").text
    assert caption == "1 change from version 1 to version 2", caption
    assert browser.log_problems() == []


def test_a_strings_table_change_is_listed_for_tokens_over_every_account(browser, server):
    # The console (an admin, over every account) has the page open; another operator's strings write is held.
    browser.by_id("sign-out").click()
    browser.until(lambda: browser.by_id("sign-in").is_displayed(), "the sign-in form")
    sign_in(browser, CONSOLE_TOKEN)
    open_page(browser, "changes-page")
    browser.until(lambda: browser.text("changes-summary") != "", "the list")
    status, _, body = server.request(
        "PUT", "/v1/strings/de", '"HOME_TAB" = "Startseite";'.encode(), {"Content-Type": "text/plain", "If-None-Match": "*"}
    )
    assert status == 202, body
    held = json.loads(body)["changeRequest"]
    assert held["locale"] == "de" and "account" not in held, held
    item = f"#change-list li[data-change-request='{held['id']}']"
    browser.until(lambda: browser.driver.find_elements(By.CSS_SELECTOR, f"{item} .change-diff"), "the strings request listed")
    assert browser.driver.find_element(By.CSS_SELECTOR, f"{item} h3").text == "strings table de in production: strings.put"
    browser.until(lambda: "Writes the strings table de" in browser.driver.find_element(By.CSS_SELECTOR, f"{item} .change-diff").text, "its text")
    assert buttons(browser, held["id"]) == ["Approve", "Cancel", "Reject"], buttons(browser, held["id"])
    # A reviewer over jack alone may not even read a strings table's request: the server lists it not (404 to it),
    # and the page lists jack's request only, with its buttons.
    narrow = make_token_spec(server, {"name": "jack-reviewer", "scopes": ["approve"], "accounts": ["jack"]})
    assert server.request("POST", f"/v1/change-requests/{held['id']}/approve", token=narrow)[0] == 404
    jack = [entry["id"] for entry in requests_in(server, "open") if entry.get("account") == "jack"]
    assert len(jack) == 1, jack
    browser.by_id("sign-out").click()
    browser.until(lambda: browser.by_id("sign-in").is_displayed(), "the sign-in form")
    sign_in(browser, narrow)
    open_page(browser, "changes-page")
    browser.until(lambda: browser.text("changes-summary") == "1 change request waiting, oldest first.", "jack's request alone")
    listed = browser.driver.execute_script(
        "return [...document.querySelectorAll('#change-list li')].map((item) => item.dataset.changeRequest);"
    )
    assert listed == jack, listed
    assert buttons(browser, jack[0]) == ["Approve", "Reject"]
    assert browser.log_problems() == []
