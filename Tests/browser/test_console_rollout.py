"""The console's rollout panel in a real browser (docs/rollouts.md): a draft saved from the
editor, a rollout started at 50% from the page, its two arms drawn by the server and the answers each served,
and a rollback with its reason, each checked against the API with urllib; and what a token without `deploy`
sees. The tests run in file order and share one server and one browser (conftest.py).
"""

import json
import os
from datetime import datetime, timedelta, timezone
import re

from console_harness import CONSOLE_TOKEN, account_names, svg_text
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

DRAFT_MESSAGE = "Stories instead of News"
REASON = "crash rate up on 5.2"


def sign_in(browser, token):
    """Signs in from the sign-in form with `token` and waits for the workspace and the token's abilities."""
    browser.driver.get(browser.base + "/console/")
    browser.until(lambda: browser.by_id("sign-in").is_displayed(), "the sign-in form")
    browser.by_id("token").send_keys(token, Keys.ENTER)
    browser.until(lambda: browser.by_id("workspace").is_displayed(), "the workspace")
    browser.until(lambda: browser.text("who").startswith("Signed in with"), "the token's abilities")


def open_account(browser, account):
    search = browser.by_id("search")
    search.clear()
    search.send_keys(account)
    # The list is drawn again once the search answers: wait for that list, not the one before it.
    browser.until(lambda: account_names(browser) == [account], f"{account} alone found by the search")
    browser.driver.find_element(By.CSS_SELECTOR, f"#account-list button[data-account='{account}']").send_keys(Keys.ENTER)
    browser.until(lambda: f"Opened {account}" in browser.status(), f"{account} to load")


def versions(server, account):
    status, _, body = server.request("GET", f"/v1/accounts/{account}/layout/versions")
    assert status == 200, body
    return {entry["version"]: entry for entry in json.loads(body)["versions"]}


def rollout(server, account):
    status, _, body = server.request("GET", f"/v1/accounts/{account}/layout/rollout")
    assert status == 200, body
    return json.loads(body)


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUCKET_VECTORS = os.path.join(ROOT, "Clients", "conformance", "bucket-vectors.json")


def fnv1a32(text):
    """FNV-1a 32 over the UTF-16 code units of `text`, as GrowthBook's SDKs hash a string (docs/rollouts.md)."""
    units = text.encode("utf-16-le")
    value = 0x811C9DC5
    for at in range(0, len(units), 2):
        value = ((value ^ int.from_bytes(units[at : at + 2], "little")) * 0x01000193) & 0xFFFFFFFF
    return value


def bucket(seed, install):
    """The rollout bucket (docs/rollouts.md), computed here independently of the server: fnv1a32(decimal(fnv1a32(seed + id))) mod 10000."""
    return fnv1a32(str(fnv1a32(seed + install))) % 10000


def texts(browser, selector):
    """The visible texts of the elements `selector` finds, read in one script (the panel and the history are drawn
    again as answers and events come, so element handles could go stale between reads)."""
    return browser.driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map((element) => element.innerText.trim());", selector
    )


def history_cells(browser, version):
    return texts(browser, f"#history-rows tr[data-version='{version}'] th, #history-rows tr[data-version='{version}'] td")


def served_shown(browser, arm):
    found = re.search(r"served ([\d,]+)", browser.text(f"rollout-{arm}-caption"))
    return int(found.group(1).replace(",", "")) if found else None


# MARK: The steps


def test_bucket_vectors_of_the_contract():
    # The test's own bucket (used below to predict each install's arm) against the vectors of
    # Clients/conformance/bucket-vectors.json, the file the server's and both clients' tests read.
    with open(BUCKET_VECTORS, encoding="utf-8") as handle:
        vectors = json.load(handle)["vectors"]
    assert len(vectors) >= 5
    for vector in vectors:
        assert bucket(vector["seed"], vector["installId"]) == vector["bucket"], vector


def test_save_as_draft_stores_a_version_that_no_environment_points_at(browser, server):
    sign_in(browser, CONSOLE_TOKEN)
    assert browser.text("who") == "Signed in with an admin token"
    open_account(browser, "jack")
    browser.until(lambda: "No rollout yet" in browser.text("rollout-summary"), "the empty rollout panel")
    browser.until(lambda: browser.driver.find_elements(By.CSS_SELECTOR, "#environment-rows tr"), "the environments")
    assert browser.text("environment-rows") == "production version 1"
    published, etag, source = server.layout("jack")
    assert published == 1 and '"title": "News"' in source

    editor = browser.by_id("source")
    browser.select_text(editor, '"title": "News"')
    editor.send_keys('"title": "Stories"')
    browser.by_id("change-message").send_keys(DRAFT_MESSAGE)
    browser.by_id("save-draft").click()
    browser.until(lambda: "Saved draft version 2 of jack" in browser.status(), "the draft to be saved")
    assert "clients still get version 1" in browser.status()

    # Stored, and the pointer did not move: the API says so, and so do the history and the preview.
    listed = versions(server, "jack")
    assert listed[2]["environments"] == [] and listed[2]["message"] == DRAFT_MESSAGE
    assert listed[1]["environments"] == ["production"]
    assert server.layout("jack")[:2] == (1, etag)
    status, _, body = server.request("GET", "/v1/accounts/jack/tabs", token=None)
    assert status == 200 and json.loads(body)["version"] == 1
    browser.until(lambda: browser.driver.find_elements(By.CSS_SELECTOR, "#history-rows tr[data-version='2']"), "the draft listed")
    assert history_cells(browser, 2)[0] == "2" and history_cells(browser, 2)[4] == ""
    assert history_cells(browser, 1)[0] == "1 (current)" and history_cells(browser, 1)[4] == "production"
    assert "News" in svg_text(browser.preview_svg()) and "Stories" not in svg_text(browser.preview_svg())
    # The start form offers the draft, chosen already.
    assert browser.by_id("rollout-version").get_property("value") == "2"
    assert browser.log_problems() == []


def test_a_rollout_started_at_half_shows_running_with_both_arms_drawn_and_their_answers(browser, server):
    browser.by_id("rollout-start-percent").send_keys("50")
    browser.by_id("rollout-start-button").click()
    browser.until(lambda: browser.text("rollout-state") == "running", "the rollout to run")
    assert browser.text("rollout-percent") == "50% of installs get version 2"
    assert "Started rollout #1: version 2 at 50%" in browser.status()
    started = rollout(server, "jack")
    assert (started["state"], started["percent"], started["version"], started["stableVersion"]) == ("running", 50, 2, 1)
    assert not browser.by_id("rollout-start").is_displayed()
    for name in ["rollout-raise", "rollout-pause", "rollout-complete", "rollout-rollback"]:
        assert browser.by_id(name).is_displayed(), name
    assert not browser.by_id("rollout-resume").is_displayed()

    # Each arm is its version drawn by the server: the candidate has the draft's title, the stable one not.
    candidate = svg_text(browser.preview_svg("rollout-candidate-image"))
    stable = svg_text(browser.preview_svg("rollout-stable-image"))
    assert "Stories" in candidate and "News" not in candidate, candidate
    assert "News" in stable and "Stories" not in stable, stable
    assert "version 2" in browser.text("rollout-candidate-caption") and "version 1" in browser.text("rollout-stable-caption")

    # Installs ask as apps do; the bucket (computed here) says which arm each gets, and the server agrees.
    arms = {"candidate": 0, "stable": 0}
    for number in range(40):
        install = f"install-{number}"
        expected = "candidate" if bucket(started["seed"], install) < 50 * 100 else "stable"
        status, _, body = server.request("GET", "/v1/accounts/jack/tabs", headers={"X-Install-Id": install}, token=None)
        assert status == 200
        assert json.loads(body)["version"] == (2 if expected == "candidate" else 1), install
        arms[expected] += 1
    assert arms["candidate"] > 0 and arms["stable"] > 0, arms
    # The panel shows the answers per arm as the API counts them (read again every few seconds). The count is at
    # least the answers above: the page's own reads of the layout (no install id) are answers in the stable arm too.
    counted = rollout(server, "jack")["served"]
    assert counted["candidate"] >= arms["candidate"] and counted["stable"] >= arms["stable"], (counted, arms)
    browser.until(
        lambda: (served_shown(browser, "candidate"), served_shown(browser, "stable"))
        == tuple(rollout(server, "jack")["served"][arm] for arm in ("candidate", "stable")),
        f"the answers per arm shown as the API counts them ({counted})",
    )
    browser.screenshot("20-rollout-running")
    assert browser.log_problems() == []


def test_a_lower_percent_is_refused_with_the_servers_problem_and_nothing_changes(browser, server):
    raise_to = browser.by_id("rollout-set-percent")
    raise_to.send_keys("20")
    browser.by_id("rollout-raise").click()
    browser.until(lambda: browser.by_id("rollout-errors").is_displayed(), "the refusal")
    assert "409" in browser.text("rollout-errors-heading")
    assert "only grows" in browser.text("rollout-error-text")
    assert browser.text("alert").startswith("Refused: 409")
    assert rollout(server, "jack")["percent"] == 50
    raise_to.clear()
    assert browser.log_problems(allowed={("/v1/accounts/jack/layout/rollout", 409)}) == []


def test_a_rollback_from_the_page_records_its_reason(browser, server):
    browser.by_id("rollout-rollback").click()
    browser.until(lambda: "Say why" in browser.text("alert"), "the reason asked for")
    assert rollout(server, "jack")["state"] == "running"

    browser.by_id("rollout-reason-input").send_keys(REASON)
    browser.by_id("rollout-rollback").click()
    browser.until(lambda: browser.text("rollout-state") == "rolled back", "the rollback")
    assert browser.text("rollout-reason") == REASON
    # The rollout's history: each change with the server's message and its author (the time as the browser writes it).
    history = browser.driver.find_elements("css selector", "#rollout-history li")
    assert [item.get_attribute("data-change") for item in history] == ["started", "rolledBack"]
    assert [re.sub(r"^.*? (?=rollout 1)", "", item.text) for item in history] == [
        "rollout 1 of version 2: started, 50% by console",
        f"rollout 1 of version 2: rolled back to version 1: {REASON} by console",
    ]
    assert all(item.find_element("css selector", "time").get_attribute("datetime").endswith("Z") for item in history)
    assert not browser.by_id("rollout-errors").is_displayed()
    browser.until(lambda: "Rolled back: rollout #1 is rolled back" in browser.status(), "the rollback announced")
    ended = rollout(server, "jack")
    assert ended["state"] == "rolledBack" and ended["reason"] == REASON
    # Everyone gets the stable version again, and a new rollout may start.
    status, _, body = server.request("GET", "/v1/accounts/jack/tabs", headers={"X-Install-Id": "install-0"}, token=None)
    assert status == 200 and json.loads(body)["version"] == 1
    assert not browser.by_id("rollout-controls").is_displayed()
    assert browser.by_id("rollout-start").is_displayed()
    assert browser.text("environment-rows") == "production version 1"
    # The change feed has each change of the rollout, newest first.
    browser.until(
        lambda: [re.sub(r"^.*? (?=rollout #)", "", text) for text in texts(browser, "#feed-list li.rollout-event")]
        == ["rollout #1 of jack: version 2 rolled back by console", "rollout #1 of jack: version 2 running at 50% by console"],
        "the rollout's start and rollback in the change feed",
    )
    browser.screenshot("21-rollout-rolled-back")
    assert browser.log_problems() == []


def test_a_rollout_in_steps_is_advanced_paused_resumed_and_completed_from_the_page(browser, server):
    _, etag, _ = server.layout("jack")
    browser.by_id("rollout-start-steps").send_keys("10 PT1H, 50 PT2H, 100 PT3H")
    browser.by_id("rollout-start-button").click()
    browser.until(lambda: browser.text("rollout-state") == "running", "the second rollout to run")
    assert "Started rollout #2: version 2 at 10%" in browser.status()
    assert texts(browser, "#rollout-steps li") == ["10% for PT1H (now)", "50% for PT2H", "100% for PT3H"]
    assert texts(browser, "#rollout-steps li[aria-current='step']") == ["10% for PT1H (now)"]
    started = rollout(server, "jack")
    assert started["steps"] == [{"percent": 10, "hold": "PT1H"}, {"percent": 50, "hold": "PT2H"}, {"percent": 100, "hold": "PT3H"}]
    assert browser.text("rollout-next") not in ("", "none")  # the time of the next step, as the browser writes it

    advance = browser.by_id("rollout-advance")
    assert advance.text == "Next step: 50%"
    advance.click()
    browser.until(lambda: browser.text("rollout-percent") == "50% of installs get version 2", "the next step")
    assert rollout(server, "jack")["percent"] == 50
    browser.until(lambda: browser.by_id("rollout-advance").text == "Next step: 100%", "the step after")
    for number in range(30):
        server.request("GET", "/v1/accounts/jack/tabs", headers={"X-Install-Id": f"phone-{number}"}, token=None)
    browser.until(lambda: min(served_shown(browser, "candidate"), served_shown(browser, "stable")) > 0, "answers in both arms")
    browser.driver.execute_script("document.getElementById('rollout').scrollIntoView()")
    browser.screenshot("22-rollout-steps")  # docs/console-rollout.png

    browser.by_id("rollout-pause").click()
    browser.until(lambda: browser.text("rollout-state") == "paused", "the pause")
    assert rollout(server, "jack")["state"] == "paused" and browser.text("rollout-next") == "none"
    assert browser.by_id("rollout-resume").is_displayed() and not browser.by_id("rollout-pause").is_displayed()
    browser.by_id("rollout-resume").click()
    browser.until(lambda: browser.text("rollout-state") == "running", "the resume")
    assert rollout(server, "jack")["state"] == "running"

    # Completing moves the pointer: the environment, the history, the source and the preview follow.
    browser.by_id("rollout-complete").click()
    browser.until(lambda: "Completed: rollout #2 is completed" in browser.status(), "the completion announced")
    assert browser.text("rollout-state") == "completed"
    assert rollout(server, "jack")["state"] == "completed"
    version, new_etag, source = server.layout("jack")
    assert version == 2 and new_etag != etag and '"title": "Stories"' in source
    browser.until(lambda: browser.text("environment-rows") == "production version 2", "production on version 2")
    browser.until(lambda: history_cells(browser, 2)[0] == "2 (current)", "version 2 current in the history")
    assert history_cells(browser, 2)[4] == "production" and history_cells(browser, 1)[4] == ""
    browser.until(lambda: browser.by_id("source").get_property("value") == source, "the completed version in the editor")
    browser.until(lambda: "Stories" in svg_text(browser.preview_svg()), "the preview of the completed version")
    assert browser.log_problems() == []


def test_a_token_without_deploy_sees_the_rollout_but_no_button_that_changes_it(browser, server):
    status, _, body = server.request(
        "POST", "/v1/tokens", json.dumps({"name": "editor", "scopes": ["write"]}).encode(), {"Content-Type": "application/json"}
    )
    assert status == 201, body
    writer = json.loads(body)["token"]
    status, _, body = server.request(
        "POST", "/v1/tokens", json.dumps({"name": "release", "scopes": ["deploy"]}).encode(), {"Content-Type": "application/json"}
    )
    assert status == 201, body
    deployer = json.loads(body)["token"]

    browser.by_id("sign-out").click()
    sign_in(browser, writer)
    assert browser.text("who") == "Signed in with a token that may read and write"
    open_account(browser, "jack")
    browser.until(lambda: browser.text("rollout-state") == "completed", "the last rollout shown")
    assert browser.by_id("save-draft").is_displayed()
    deploy_only = ["rollout-start", "rollout-controls", "rollout-rollback", "rollout-start-button"]
    assert [name for name in deploy_only if browser.by_id(name).is_displayed()] == []
    # What the token may do was asked of the server (`GET /v1/tokens/self`, pages.js), not tried: nothing refused.
    assert browser.log_problems() == []

    browser.by_id("sign-out").click()
    sign_in(browser, deployer)
    assert browser.text("who") == "Signed in with a token that may read and deploy"
    open_account(browser, "jack")
    browser.until(lambda: browser.by_id("rollout-start").is_displayed(), "the start form for a deploy token")
    assert not browser.by_id("save-draft").is_displayed() and not browser.by_id("save").is_displayed()
    # The arms are not drawn (drawing a stored version is `POST /v1/preview`, which takes `write`), and say so.
    browser.until(lambda: "not drawn" in browser.text("rollout-candidate-caption"), "the arms' captions")
    assert "takes a token that may write" in browser.text("rollout-stable-caption")
    assert browser.log_problems(allowed={("/v1/preview", 403)}) == []



def test_a_scheduled_rollout_offers_only_its_rollback(browser, server):
    # Started with the API (the page has no `startAt`), as a release job would; the deploy token is still signed in.
    _, etag, _ = server.layout("jack")
    start_at = (datetime.now(timezone.utc) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    plan = {"version": 1, "percent": 20, "startAt": start_at}
    status, _, body = server.request(
        "POST", "/v1/accounts/jack/layout/rollout", json.dumps(plan).encode(), {"Content-Type": "application/json", "If-Match": etag}
    )
    assert status == 201, body
    browser.until(lambda: browser.text("rollout-state") == "scheduled", "the scheduled rollout (from the change feed)")
    assert browser.by_id("rollout-rollback").is_displayed()
    shown = ["rollout-advance", "rollout-raise", "rollout-set-percent", "rollout-pause", "rollout-resume", "rollout-start"]
    assert [name for name in shown if browser.by_id(name).is_displayed()] == []
    browser.by_id("rollout-reason-input").send_keys("not this week")
    browser.by_id("rollout-rollback").click()
    browser.until(lambda: browser.text("rollout-state") == "rolled back", "the scheduled rollout cancelled")
    assert rollout(server, "jack")["reason"] == "not this week"
    assert browser.log_problems(allowed={("/v1/preview", 403)}) == []
