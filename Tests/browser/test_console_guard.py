"""A guarded rollout in the console, in a real browser (docs/rollouts.md "Guarded rollouts"), and the tab bars
drawn in the dark scheme (docs/layout-format.md, `scheme=dark`).

Version 1 of `guarded` is served and version 2 (which adds Search) goes to half the installs with a guard, all
through the API with urllib; installs then report as apps do (`POST …/tabs/reports`, no credentials). The panel
shows each arm's health beside its tab bar and the guard's rule in words, as the API counts them; once the guard
pauses the rollout by itself, and later rolls it back, the panel says so with the server's reason. Then the
appearance is switched to dark: the saved layout's preview (`…/tabs/preview.svg?scheme=dark`) and the arms
(`POST /v1/preview?scheme=dark`) are asked for and drawn in the layout's dark colours. The tests run in file
order and share one server and one browser (conftest.py).
"""

import json
import re

from console_harness import CONSOLE_TOKEN, SVG, svg_text
from selenium.webdriver.support.ui import Select
from test_console_rollout import bucket, open_account, rollout, sign_in

ACCOUNT = "guarded"
SEED = "console-guard"
LIGHT_BACKGROUND = "#F7F7F7"
DARK_BACKGROUND = "#101820"
APPEARANCE = {"backgroundColor": LIGHT_BACKGROUND, "dark": {"backgroundColor": DARK_BACKGROUND, "tintColor": "#FFB000"}}
HOME = {"id": "home", "title": "Home", "rootViewController": "HomeViewController"}
SEARCH = {"id": "search", "title": "Search", "rootViewController": "SearchViewController"}
GUARD = {"kind": "tabFailed", "maxRatio": 2, "minInstalls": 20, "minFailures": 5, "action": "rollback"}
JSON = {"Content-Type": "application/json"}


def put(server, body, headers, query=""):
    status, answered, text = server.request(
        "PUT", f"/v1/accounts/{ACCOUNT}/layout{query}", body=json.dumps(body).encode(), headers={**JSON, **headers}
    )
    assert status in (200, 201), text
    return answered["ETag"]


def installs_in(arm, count, start=0):
    """`count` install ids that the rollout's bucket (computed here by the bucket rule of docs/rollouts.md) puts in `arm`."""
    found = []
    number = start
    while len(found) < count:
        install = f"phone-{number}"
        if (bucket(SEED, install) < 50 * 100) == (arm == "candidate"):
            found.append(install)
        number += 1
    return found


def report(server, install, version, kind, tab=None):
    entry = {"version": version, "kind": kind}
    if tab:
        entry["tab"] = tab
    body = json.dumps({"installId": install, "reports": [entry]}).encode()
    status, _, text = server.request("POST", f"/v1/accounts/{ACCOUNT}/tabs/reports", body=body, headers=JSON, token=None)
    assert status == 202, text
    return json.loads(text)


def health_shown(browser, arm):
    """The arm's health list as the page shows it: {"installs"|"failing"|"tabs": text}."""
    return browser.driver.execute_script(
        "return Object.fromEntries([...document.querySelectorAll(`#rollout-${arguments[0]}-health dd`)]"
        ".map((dd) => [dd.dataset.health, dd.textContent]));",
        arm,
    )


def test_a_guarded_rollout_shows_each_arms_health_beside_its_tab_bar_and_the_guard_in_words(browser, server):
    etag = put(server, {"schemaVersion": 1, "appearance": APPEARANCE, "tabs": [HOME]}, {"If-None-Match": "*"})
    put(server, {"schemaVersion": 1, "appearance": APPEARANCE, "tabs": [HOME, SEARCH]}, {"If-Match": etag}, "?publish=false")
    plan = {"version": 2, "percent": 50, "seed": SEED, "guard": GUARD}
    status, _, text = server.request(
        "POST", f"/v1/accounts/{ACCOUNT}/layout/rollout", body=json.dumps(plan).encode(), headers={**JSON, "If-Match": etag}
    )
    assert status in (200, 201), text

    # A few reports, too few for the guard: 4 stable installs (one failing on home), 4 candidate ones (two failing
    # on search, one on home as well); a stable install's report about version 2 is not its arm's and is ignored.
    stable, candidate = installs_in("stable", 4), installs_in("candidate", 4)
    for install in stable:
        report(server, install, 1, "rendered")
    report(server, stable[0], 1, "tabFailed", "home")
    for install in candidate:
        report(server, install, 2, "rendered")
    report(server, candidate[0], 2, "tabFailed", "search")
    report(server, candidate[1], 2, "tabFailed", "search")
    report(server, candidate[1], 2, "tabFailed", "home")
    assert report(server, stable[1], 2, "tabFailed", "search")["ignored"] == 1
    health = rollout(server, ACCOUNT)["health"]
    assert (health["candidate"]["installs"], health["candidate"]["byKind"]["tabFailed"]) == (4, 2), health
    assert health["candidate"]["byTab"] == {"search": 2, "home": 1}, health
    assert (health["stable"]["installs"], health["stable"]["byKind"]["tabFailed"]) == (4, 1), health

    sign_in(browser, CONSOLE_TOKEN)
    open_account(browser, ACCOUNT)
    browser.until(lambda: browser.text("rollout-state") == "running", "the running rollout")
    browser.until(lambda: health_shown(browser, "candidate").get("installs") == "4 installs", "the candidate's health")
    assert health_shown(browser, "candidate") == {
        "installs": "4 installs",
        "failing": "2 installs · 50%",
        "tabs": "search 2, home 1",
    }
    assert health_shown(browser, "stable") == {"installs": "4 installs", "failing": "1 install · 25%", "tabs": "home 1"}
    # Beside each arm's tab bar: the list sits in the same figure as the arm's drawing.
    for arm in ("stable", "candidate"):
        figure = browser.driver.execute_script(
            "return document.getElementById(`rollout-${arguments[0]}-health`).closest('figure').dataset.arm;", arm
        )
        assert figure == arm
    labels = browser.driver.execute_script(
        "return [...document.querySelectorAll('#rollout-candidate-health dt')].map((dt) => dt.textContent);"
    )
    assert labels == ["Reporting", "Failing (tabFailed)", "Failing tabs"], labels
    assert browser.text("rollout-guard") == (
        "Guard: rolls back when the candidate's tabFailed share exceeds 2× stable's, after 20 installs and 5 failures."
    )
    assert not browser.by_id("rollout-guard-tripped").is_displayed()
    browser.driver.execute_script("document.getElementById('rollout-view').scrollIntoView();")
    browser.screenshot("40-guarded-rollout-health")
    assert browser.log_problems() == []


def test_the_guards_pause_is_shown_with_its_reason_and_author(browser, server):
    # A stricter guard that pauses; the next failing report tips it (within two seconds, author `tabserver`).
    change = {"guard": {"kind": "tabFailed", "maxRatio": 1.5, "minInstalls": 4, "minFailures": 3, "action": "pause"}}
    status, _, text = server.request(
        "PATCH", f"/v1/accounts/{ACCOUNT}/layout/rollout", body=json.dumps(change).encode(), headers=JSON
    )
    assert status == 200, text
    browser.until(
        lambda: browser.text("rollout-guard")
        == "Guard: pauses when the candidate's tabFailed share exceeds 1.5× stable's, after 4 installs and 3 failures.",
        "the changed guard (read again on its event)",
    )
    candidate = installs_in("candidate", 4)
    report(server, candidate[2], 2, "tabFailed", "search")

    browser.until(lambda: browser.text("rollout-state") == "paused", "the guard's pause", timeout=20)
    paused = rollout(server, ACCOUNT)
    line = paused["history"][-1]
    assert (line["author"], line["state"]) == ("tabserver", "paused"), paused["history"]
    reason = line.get("reason") or paused.get("reason")
    assert reason.startswith(
        "guard tabFailed (tabs search, home): candidate 3 of 4 installs failing (75%), stable 1 of 4 (25%)"
    ), reason
    browser.until(lambda: browser.by_id("rollout-guard-tripped").is_displayed(), "the guard's trip shown")
    tripped = browser.text("rollout-guard-tripped")
    assert tripped.startswith("Paused by the guard (tabserver) at "), tripped
    assert tripped.endswith(f": {reason}"), tripped
    assert browser.by_id("rollout-guard-tripped").find_element("css selector", "time").get_attribute("datetime") == line["at"]
    browser.until(lambda: health_shown(browser, "candidate").get("failing") == "3 installs · 75%", "the third failing install")
    assert health_shown(browser, "candidate")["tabs"] == "search 3, home 1"
    # The history says who paused it, as for any change.
    assert browser.driver.execute_script(
        "return document.querySelector('#rollout-history li:last-child .author').textContent;"
    ) == "by tabserver"
    browser.driver.execute_script("document.getElementById('rollout-view').scrollIntoView();")
    browser.screenshot("41-guard-paused")

    # An operator resumes it: the guard's pause is history, no longer the rollout's state.
    status, _, text = server.request(
        "PATCH", f"/v1/accounts/{ACCOUNT}/layout/rollout", body=json.dumps({"paused": False}).encode(), headers=JSON
    )
    assert status == 200, text
    browser.until(lambda: browser.text("rollout-state") == "running", "the resumed rollout")
    browser.until(lambda: not browser.by_id("rollout-guard-tripped").is_displayed(), "the trip no longer shown")
    assert browser.log_problems() == []


def test_the_guards_rollback_is_shown_with_the_rollouts_reason(browser, server):
    # The same rule, now rolling back: the next failing candidate install tips it again.
    change = {"guard": {"kind": "tabFailed", "maxRatio": 1.5, "minInstalls": 4, "minFailures": 3, "action": "rollback"}}
    status, _, text = server.request(
        "PATCH", f"/v1/accounts/{ACCOUNT}/layout/rollout", body=json.dumps(change).encode(), headers=JSON
    )
    assert status == 200, text
    browser.until(lambda: browser.text("rollout-guard").startswith("Guard: rolls back when"), "the guard that rolls back")
    report(server, installs_in("candidate", 4)[3], 2, "tabFailed", "search")

    browser.until(lambda: browser.text("rollout-state") == "rolled back", "the guard's rollback", timeout=20)
    ended = rollout(server, ACCOUNT)
    assert (ended["state"], ended["history"][-1]["author"]) == ("rolledBack", "tabserver"), ended["history"]
    assert ended["reason"].startswith("guard tabFailed (tabs search, home): candidate 4 of 4 installs failing (100%)")
    browser.until(lambda: browser.by_id("rollout-guard-tripped").is_displayed(), "the guard's rollback shown")
    tripped = browser.text("rollout-guard-tripped")
    assert tripped.startswith("Rolled back by the guard (tabserver) at ") and tripped.endswith(f": {ended['reason']}"), tripped
    assert browser.text("rollout-reason") == ended["reason"]
    browser.until(lambda: health_shown(browser, "candidate").get("failing") == "4 installs · 100%", "the fourth failing install")
    assert browser.log_problems() == []


def drawn_background(root):
    return next(element.get("fill") for element in root.iter(f"{SVG}rect") if element.get("id") == "background")


def scheme_requests(browser):
    """The paths and queries the page fetched with `scheme=dark` (the Resource Timing entries' names)."""
    return browser.driver.execute_script(
        "return performance.getEntriesByType('resource').map((entry) => new URL(entry.name))"
        ".filter((url) => url.searchParams.get('scheme') === 'dark').map((url) => url.pathname);"
    )


def test_the_previews_switch_to_the_dark_scheme(browser, server):
    assert drawn_background(browser.preview_svg()) == LIGHT_BACKGROUND
    assert browser.by_id("preview-figure").get_attribute("data-scheme") == "light"
    assert scheme_requests(browser) == []
    browser.driver.execute_script("performance.clearResourceTimings();")

    Select(browser.by_id("scheme")).select_by_value("dark")
    browser.until(lambda: "dark" in browser.text("preview-caption"), "the dark preview's caption")
    root = browser.preview_svg()
    assert drawn_background(root) == DARK_BACKGROUND
    assert "Home" in svg_text(root) and "Search" not in svg_text(root)
    title = next(root.iter(f"{SVG}title")).text
    assert title.startswith(f"Tab bar of {ACCOUNT}") and title.endswith(", dark"), title
    assert browser.by_id("preview-figure").get_attribute("data-scheme") == "dark"
    assert "dark" in browser.by_id("preview-image").get_attribute("alt")

    # The arms are drawn again in dark (each stored version through POST /v1/preview?scheme=dark).
    for arm, titles in (("stable", ["Home"]), ("candidate", ["Home", "Search"])):
        browser.until(
            lambda arm=arm: "(dark)" in (browser.by_id(f"rollout-{arm}-image").get_attribute("alt") or ""),
            f"the {arm} arm drawn in dark",
        )
        drawn = browser.preview_svg(f"rollout-{arm}-image")
        assert drawn_background(drawn) == DARK_BACKGROUND, arm
        assert all(title in svg_text(drawn) for title in titles), svg_text(drawn)
    asked = scheme_requests(browser)
    assert f"/v1/accounts/{ACCOUNT}/tabs/preview.svg" in asked, asked
    assert asked.count("/v1/preview") == 2, asked
    browser.driver.execute_script("document.getElementById('preview-heading').scrollIntoView();")
    browser.screenshot("42-dark-previews")

    # Unsaved edits are drawn in the scheme chosen too.
    editor = browser.by_id("source")
    browser.select_text(editor, DARK_BACKGROUND)
    editor.send_keys("#202A36")
    browser.by_id("preview-edits").click()
    browser.until(lambda: "Unsaved edits" in browser.text("preview-caption"), "the edits drawn")
    assert re.search(r"dark$", browser.text("preview-caption")), browser.text("preview-caption")
    assert drawn_background(browser.preview_svg()) == "#202A36"

    # Back to light: the light colours again.
    Select(browser.by_id("scheme")).select_by_value("light")
    browser.until(lambda: drawn_background(browser.preview_svg()) == LIGHT_BACKGROUND, "the light preview again")
    assert browser.by_id("preview-figure").get_attribute("data-scheme") == "light"
    assert browser.log_problems() == []
