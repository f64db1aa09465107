"""The console's tokens, audit and webhooks pages in a real browser (docs/access-and-webhooks.md,
docs/webhooks.md), and what it hides from a token that may not use it.

Tokens are made on the tokens page and their secrets used with urllib as a CI job would; the audit page is read
back against `GET /v1/audit`; webhooks deliver to a receiver on 127.0.0.1 (or the page says "no webhooks yet" on
a server without the routes). The tests run in file order and share one server and one browser (conftest.py).
"""

import http.server
import json
import re
import threading
import urllib.parse
from datetime import datetime

from console_harness import CONSOLE_TOKEN, WAIT_SECONDS, account_names, focused
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait


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
        try:
            row = token_row(browser, "ci-jack")
            return row is not None and cells(row)[6] not in ("never", "")
        except StaleElementReferenceException:
            return False  # the reload redrew the list while it was read: read it again on the next poll

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
    _, etag, source = server.layout("jack")
    headers = {"Content-Type": "application/json", "If-Match": etag}
    assert server.request("PUT", "/v1/accounts/jack/layout", source.encode(), headers)[0] == 200
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
    hidden = ["check", "preview-edits", "save", "save-draft", "revert", "change-message", "conflict-overwrite", "rollout-start"]
    assert [name for name in hidden if browser.by_id(name).is_displayed()] == []
    restores = driver.find_elements(By.CSS_SELECTOR, "#history-rows button[aria-label^='Restore version']")
    assert restores and not any(button.is_displayed() for button in restores)
    assert [button.text for button in driver.find_elements(By.CSS_SELECTOR, "#pages button") if button.is_displayed()] == [
        "Layouts",
        "Change requests",
        "Audit",
    ]
    # What it may read still works: the audit page lists entries for it.
    open_page(browser, "audit-page")
    browser.until(lambda: len(audit_rows(browser)) > 0, "audit entries for a read token")
    assert [element.text for element in driver.find_elements(By.CSS_SELECTOR, "button") if element.is_displayed() and element.text in ("Save", "Revoke", "Rotate", "Make the token", "Redeliver")] == []
    browser.screenshot("12-read-only")
    # What the token may do was asked (`GET /v1/tokens/self`), not tried: no refused request.
    assert browser.log_problems() == []
