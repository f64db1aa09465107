"""The rollout panel on a server with two environments (`--environments staging,production`): both pointers side
by side, a draft rolled out in production (where the apps read) while staging has no rollout, and a rollback, each
checked against the API with urllib. Its own server (this module's `server` fixture) and browser.
"""

import json
import os
import tempfile
from pathlib import Path

import pytest
from console_harness import CONSOLE_TOKEN, Server
from test_console_rollout import bucket, open_account, sign_in, texts


@pytest.fixture(scope="module")
def server():
    with tempfile.TemporaryDirectory(prefix="console-environments-") as workdir:
        running = Server(os.environ["TABSERVER_BIN"], Path(workdir), ["--environments", "staging,production"])
        try:
            yield running
        finally:
            running.stop()


def rollout_in(server, environment):
    return server.request("GET", f"/v1/accounts/jack/layout/rollout?environment={environment}")


def test_a_draft_rolls_out_in_the_environment_chosen_and_only_there(browser, server):
    sign_in(browser, CONSOLE_TOKEN)
    open_account(browser, "jack")
    browser.until(lambda: texts(browser, "#environment-rows tr") == ["staging\tversion 1", "production\tversion 1"], "both pointers")
    assert browser.by_id("rollout-environment").is_displayed()
    assert browser.by_id("rollout-environment").get_property("value") == "production"

    editor = browser.by_id("source")
    browser.select_text(editor, '"title": "News"')
    editor.send_keys('"title": "Stories"')
    browser.by_id("save-draft").click()
    browser.until(lambda: "Saved draft version 2 of jack" in browser.status(), "the draft")
    assert browser.by_id("rollout-version").get_property("value") == "2"

    browser.by_id("rollout-start-percent").send_keys("50")
    browser.by_id("rollout-start-button").click()
    browser.until(lambda: browser.text("rollout-state") == "running", "the rollout in production")
    assert "in production" in browser.text("rollout-meta")
    status, _, body = rollout_in(server, "production")
    assert status == 200, body
    started = json.loads(body)
    assert (started["state"], started["version"], started["environment"]) == ("running", 2, "production")
    assert rollout_in(server, "staging")[0] == 404
    # The apps read production: an install in the candidate's bucket gets the draft.
    install = next(f"install-{n}" for n in range(100) if bucket(started["seed"], f"install-{n}") < 5000)
    status, _, body = server.request("GET", "/v1/accounts/jack/tabs", headers={"X-Install-Id": install}, token=None)
    assert status == 200 and json.loads(body)["version"] == 2

    # Staging, chosen: no rollout there, and a start form; production again: the running one.
    browser.driver.execute_script(
        "const select = document.getElementById('rollout-environment'); select.value = 'staging';"
        "select.dispatchEvent(new Event('change'));"
    )
    browser.until(lambda: "No rollout yet" in browser.text("rollout-summary"), "staging's empty panel")
    assert browser.by_id("rollout-start").is_displayed() and not browser.by_id("rollout-view").is_displayed()
    browser.driver.execute_script(
        "const select = document.getElementById('rollout-environment'); select.value = 'production';"
        "select.dispatchEvent(new Event('change'));"
    )
    browser.until(lambda: browser.text("rollout-state") == "running", "production's rollout again")

    browser.by_id("rollout-reason-input").send_keys("staging looked fine, production did not")
    browser.by_id("rollout-rollback").click()
    browser.until(lambda: browser.text("rollout-state") == "rolled back", "the rollback in production")
    status, _, body = rollout_in(server, "production")
    assert json.loads(body)["state"] == "rolledBack"
    assert browser.log_problems() == []


def test_a_promotion_shows_its_diff_first_and_then_moves_the_next_pointer(browser, server):
    # A published save enters staging (the first environment); production keeps version 1.
    editor = browser.by_id("source")
    browser.until(lambda: '"title": "News"' in editor.get_property("value"), "staging's version 1 in the editor")
    browser.select_text(editor, '"title": "News"')
    editor.send_keys('"title": "Stories"')
    browser.by_id("save").click()
    browser.until(lambda: "Saved version 3 of jack" in browser.status(), "the save in staging")
    browser.until(lambda: texts(browser, "#environment-rows tr") == ["staging\tversion 3", "production\tversion 1"], "the pointers apart")
    status, headers, _ = server.request("GET", "/v1/accounts/jack/layout?environment=production")
    assert status == 200 and headers["Layout-Version"] == "1"

    browser.until(lambda: texts(browser, "#promotions button") == ["Promote staging → production"], "the promote button")
    browser.by_id("promotions").find_element("css selector", "button").click()
    browser.until(lambda: browser.by_id("promotion").is_displayed(), "the promotion's diff")
    assert "production goes from version 1 to version 3" in browser.text("promotion-heading")
    diff = browser.text("promotion-diff")
    assert "Stories" in diff and "News" in diff, diff
    # Nothing moved before the confirmation.
    assert server.request("GET", "/v1/accounts/jack/layout?environment=production")[1]["Layout-Version"] == "1"

    browser.by_id("promotion-confirm").click()
    browser.until(lambda: "production points at version 3 now" in browser.status(), "the promotion")
    status, headers, _ = server.request("GET", "/v1/accounts/jack/layout?environment=production")
    assert status == 200 and headers["Layout-Version"] == "3"
    status, _, body = server.request("GET", "/v1/accounts/jack/tabs", token=None)
    assert status == 200 and json.loads(body)["version"] == 3
    browser.until(lambda: texts(browser, "#environment-rows tr") == ["staging\tversion 3", "production\tversion 3"], "both on 3")
    assert texts(browser, "#promotions button") == [] and not browser.by_id("promotion").is_displayed()
    browser.driver.execute_script("document.getElementById('rollout').scrollIntoView()")
    browser.screenshot("23-environments-promoted")
    assert browser.log_problems() == []


def test_a_promotion_made_elsewhere_reaches_the_page_through_the_change_feed(browser, server):
    # Another operator saves version 4 to staging and promotes it to production with the API, not this page.
    status, headers, _ = server.request("GET", "/v1/accounts/jack/layout")
    assert status == 200
    source = server.layout("jack")[2].replace('"title": "Stories"', '"title": "Tales"')
    status, _, body = server.request(
        "PUT", "/v1/accounts/jack/layout", source.encode(), {"Content-Type": "application/json", "If-Match": headers["ETag"]}
    )
    assert status == 200, body
    browser.until(lambda: texts(browser, "#environment-rows tr") == ["staging\tversion 4", "production\tversion 3"], "the save")
    production = server.request("GET", "/v1/accounts/jack/layout?environment=production")[1]["ETag"]
    status, _, body = server.request(
        "POST", "/v1/accounts/jack/layout/promote", json.dumps({"from": "staging"}).encode(),
        {"Content-Type": "application/json", "If-Match": production},
    )
    assert status == 200, body
    browser.until(lambda: texts(browser, "#environment-rows tr") == ["staging\tversion 4", "production\tversion 4"], "the promotion")
    browser.until(
        lambda: any("jack promoted from staging to production → version 4" in text for text in texts(browser, "#feed-list li")),
        "the promotion in the change feed",
    )
    assert browser.log_problems() == []

