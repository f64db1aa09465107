"""The account page's builds × tabs matrix and the builds gate's refusals in the editor, in a real browser
(docs/builds.md). Builds are declared with urllib as an app's CI would; every cell the console marks
is checked against what the server sends that build (`Tabs-Withheld` and the tabs of its answer). The tests run in
file order and share one server and one browser (conftest.py).
"""

import json

from console_harness import CONSOLE_TOKEN, line_of
from selenium.webdriver.common.by import By
from test_console_rollout import open_account, sign_in

ACCOUNT = "shop"
# Search from 2.1 on, Settings for iPad only, Profile for everyone, More with a Help child.
SOURCE = {
    "schemaVersion": 1,
    "tabs": [
        {"id": "home", "title": "Home", "image": "house", "rootViewController": "HomeViewController"},
        {
            "id": "search",
            "title": "Search",
            "image": "magnifyingglass",
            "rootViewController": "SearchViewController",
            "minAppVersion": "2.1",
        },
        {"id": "settings", "title": "Settings", "rootViewController": "SettingsViewController", "platforms": ["ipad"]},
        {"id": "profile", "title": "Profile", "rootViewController": "ProfileViewController"},
        {
            "id": "more",
            "title": "More",
            "rootViewController": "MoreViewController",
            "children": [{"id": "help", "title": "Help", "rootViewController": "HelpViewController"}],
        },
    ],
}
# 2.0 has no search screen and no profile screen; 2.1 has every screen the layout names.
BUILDS = {
    ("iphone", "2.0"): ["HomeViewController", "MoreViewController", "HelpViewController"],
    ("iphone", "2.1"): [
        "HomeViewController",
        "SearchViewController",
        "ProfileViewController",
        "MoreViewController",
        "HelpViewController",
        "SettingsViewController",
    ],
}
COLUMNS = ["home", "search", "settings", "profile", "more", "more/help"]


def matrix(browser, version=None):
    """{build: {tab key: (state, text)}} of the matrix drawn for `version` (the first when None), read in one script."""
    return browser.driver.execute_script(
        """
        const tables = [...document.querySelectorAll('#builds-matrices table.builds-matrix')];
        const table = arguments[0] === null ? tables[0] : tables.find((t) => t.dataset.version === String(arguments[0]));
        if (!table) return null;
        const result = {};
        for (const row of table.tBodies[0].rows) {
          result[row.dataset.build] = Object.fromEntries(
            [...row.querySelectorAll('td')].map((td) => [td.dataset.tab, [td.dataset.state, td.textContent]]));
        }
        return result;
        """,
        version,
    )


def served_to(server, platform, version):
    """What the server sends a build: the ids of the tabs and children it gets, and those it withheld."""
    status, headers, body = server.request(
        "GET", f"/v1/accounts/{ACCOUNT}/tabs", headers={"X-Client-Platform": platform, "X-App-Version": version}, token=None
    )
    assert status == 200, body
    layout = json.loads(body)
    got = set()

    def walk(tabs, parent):
        for tab in tabs:
            key = f"{parent}/{tab['id']}" if parent else tab["id"]
            got.add(key)
            walk(tab.get("children", []), key)

    walk(layout["tabs"] + layout.get("more", {}).get("tabs", []), "")
    withheld = {part.strip() for part in (headers.get("Tabs-Withheld") or "").split(",") if part.strip()}
    return got, withheld


def test_the_matrix_marks_the_tab_a_build_cannot_open_as_the_server_withholds_it(browser, server):
    status, _, body = server.request(
        "PUT",
        f"/v1/accounts/{ACCOUNT}/layout",
        json.dumps(SOURCE, indent=2).encode(),
        {"Content-Type": "application/json", "If-None-Match": "*"},
    )
    assert status == 201, body
    for (platform, version), names in BUILDS.items():
        status, _, body = server.request(
            "PUT", f"/v1/builds/{platform}/{version}", json.dumps({"viewControllers": names}).encode(), {"Content-Type": "application/json"}
        )
        assert status == 201, body

    sign_in(browser, CONSOLE_TOKEN)
    open_account(browser, ACCOUNT)
    browser.until(lambda: matrix(browser) and set(matrix(browser)) == {"iphone 2.0", "iphone 2.1"}, "the matrix with both builds")
    drawn = matrix(browser)
    columns = browser.driver.execute_script(
        "return [...document.querySelectorAll('#builds-matrices table thead th[data-tab]')].map((th) => th.dataset.tab);"
    )
    assert columns == COLUMNS and set(drawn["iphone 2.0"]) == set(COLUMNS), (columns, drawn)
    old, new = drawn["iphone 2.0"], drawn["iphone 2.1"]
    assert old["profile"] == ["missing", "✗ cannot open: no ProfileViewController"], old
    assert old["search"] == ["untargeted", "— not for app version 2.0"], old
    assert old["settings"] == ["untargeted", "— not for iPhone"] == new["settings"], (old, new)
    assert [old[key][0] for key in ("home", "more", "more/help")] == ["opens"] * 3, old
    assert {state for state, _ in new.values()} == {"opens", "untargeted"}, new
    assert "live" in browser.driver.find_element(By.CSS_SELECTOR, "#builds-matrices tr[data-build='iphone 2.0'] th").text
    assert "(2 builds, 2 live)" in browser.text("builds-meta")

    # Drawing the matrix asked for no declared build: neither was seen, so the console keeps neither live (nor
    # counts withheld answers); the requests below, a phone's, are sightings.
    status, _, body = server.request("GET", "/v1/builds")
    assert status == 200 and all("lastSeenAt" not in build for build in json.loads(body)["builds"]), body

    # The console's marks are the server's: what each build is sent, and what it is not.
    for platform, version in BUILDS:
        got, withheld = served_to(server, platform, version)
        cells = drawn[f"{platform} {version}"]
        assert got == {key for key, (state, _) in cells.items() if state == "opens"}, (version, got, cells)
        assert withheld == {key.split("/")[-1] for key, (state, _) in cells.items() if state in ("missing", "withheld")}, (
            version,
            withheld,
        )
    browser.driver.execute_script("document.getElementById('builds').scrollIntoView();")
    browser.screenshot("30-builds-matrix")

    # A build that opens none of the tabs it would get: its row says so, and the server withholds every one of them.
    status, _, body = server.request(
        "PUT", "/v1/builds/android/1.0", json.dumps({"viewControllers": ["LegacyViewController"]}).encode(), {"Content-Type": "application/json"}
    )
    assert status == 201, body
    browser.by_id("builds-reload").click()
    row = "#builds-matrices tr[data-build='android 1.0']"
    browser.until(lambda: browser.driver.find_elements(By.CSS_SELECTOR, f"{row}[data-opens-none='true']"), "the android row")
    assert "opens none of the tabs it would get" in browser.driver.find_element(By.CSS_SELECTOR, f"{row} th").text
    android = matrix(browser)["android 1.0"]
    assert [android[key][0] for key in ("home", "profile", "more")] == ["missing"] * 3, android
    assert [android[key][0] for key in ("search", "settings")] == ["untargeted"] * 2, android
    # The server never sends it an empty tab bar: the newest earlier version it opens whole, and here there is none.
    status, _, body = server.request(
        "GET", f"/v1/accounts/{ACCOUNT}/tabs", headers={"X-Client-Platform": "android", "X-App-Version": "1.0"}, token=None
    )
    assert status == 404 and b"nor of an earlier version" in body, (status, body)
    assert server.request("DELETE", "/v1/builds/android/1.0")[0] == 204
    browser.by_id("builds-reload").click()
    browser.until(lambda: not browser.driver.find_elements(By.CSS_SELECTOR, row), "the android build retired")
    assert browser.log_problems() == []


def test_a_save_the_gate_refuses_names_the_build_at_the_lines_of_the_tabs(browser, server):
    editor = browser.by_id("source")
    version, etag, source = server.layout(ACCOUNT)
    # Search for everyone: build 2.0 would get it but has no SearchViewController (and Profile is still untargeted).
    browser.select_text(editor, '"minAppVersion": "2.1"')
    editor.send_keys('"minAppVersion": "1.0"')
    edited = editor.get_property("value")
    browser.by_id("save").click()
    browser.until(lambda: browser.by_id("source-errors").is_displayed(), "the gate's refusal in the editor")
    assert "Refused by the builds gate: live build iphone 2.0" in browser.text("alert")
    heading = browser.text("source-errors-heading")
    assert heading == "2 tabs that live build iphone 2.0 cannot open: nothing was saved", heading
    items = browser.driver.execute_script(
        "return [...document.querySelectorAll('#source-error-list li')]"
        ".map((item) => [item.dataset.build, item.querySelector('button')?.dataset.line, item.textContent]);"
    )
    lines = {int(line): text for build, line, text in items if build == "iphone 2.0" and line}
    search = line_of(edited, '"rootViewController": "SearchViewController"')
    profile = line_of(edited, '"rootViewController": "ProfileViewController"')
    assert set(lines) == {search, profile}, items
    assert "/tabs/1/rootViewController" in lines[search] and "does not declare 'SearchViewController'" in lines[search]
    assert "iphone 2.0" in lines[profile] and "ProfileViewController" in lines[profile]
    marked = browser.driver.execute_script(
        "return [...document.querySelectorAll('#gutter .error-line')].map((line) => Number(line.dataset.line));"
    )
    assert sorted(marked) == sorted([search, profile]), marked
    # Choosing the error moves the cursor to its line.
    browser.driver.find_element(By.CSS_SELECTOR, f"#source-error-list button[data-line='{search}']").click()
    start = browser.driver.execute_script("return document.getElementById('source').selectionStart;")
    assert edited[:start].count("\n") + 1 == search
    # Nothing changed on the server.
    assert server.layout(ACCOUNT)[:2] == (version, etag)
    browser.driver.execute_script("document.getElementById('source-errors').scrollIntoView();")
    browser.screenshot("31-gate-refusal")
    assert browser.log_problems(allowed={(f"/v1/accounts/{ACCOUNT}/layout", 422)}) == []


def test_targeting_passes_the_gate_and_the_matrix_follows_a_rollout_candidate(browser, server):
    editor = browser.by_id("source")
    browser.select_text(editor, '"minAppVersion": "1.0"')
    editor.send_keys('"minAppVersion": "2.1"')
    browser.select_text(editor, '"rootViewController": "ProfileViewController"')
    editor.send_keys('"rootViewController": "ProfileViewController", "minAppVersion": "2.1"')
    browser.by_id("save").click()
    browser.until(lambda: f"Saved version 2 of {ACCOUNT}" in browser.status(), "the targeted layout saved")
    browser.until(lambda: (matrix(browser, 2) or {}).get("iphone 2.0", {}).get("profile", [None])[0] == "untargeted", "the new matrix")
    assert matrix(browser, 2)["iphone 2.0"]["profile"] == ["untargeted", "— not for app version 2.0"]
    assert "Every declared build can open every tab it gets." == browser.text("builds-summary")

    # A draft adds an iPad-only tab; while it rolls out, its matrix is drawn beside the served one.
    _, etag, source = server.layout(ACCOUNT)
    draft = json.loads(source)
    draft["tabs"].append({"id": "deals", "title": "Deals", "rootViewController": "DealsViewController", "platforms": ["ipad"]})
    status, _, body = server.request(
        "PUT", f"/v1/accounts/{ACCOUNT}/layout?publish=false", json.dumps(draft).encode(), {"Content-Type": "application/json", "If-Match": etag}
    )
    assert status in (200, 201), body
    status, _, body = server.request(
        "POST",
        f"/v1/accounts/{ACCOUNT}/layout/rollout",
        json.dumps({"version": 3, "percent": 25}).encode(),
        {"Content-Type": "application/json", "If-Match": etag},
    )
    assert status in (200, 201), body
    browser.until(lambda: matrix(browser, 3) is not None, "the candidate's matrix")
    captions = browser.driver.execute_script(
        "return [...document.querySelectorAll('#builds-matrices caption')].map((caption) => caption.textContent);"
    )
    assert captions == [f"Served: version 2 of {ACCOUNT}", f"Rollout candidate: version 3 of {ACCOUNT} (25% of installs)"], captions
    assert matrix(browser, 3)["iphone 2.1"]["deals"] == ["untargeted", "— not for iPhone"]
    assert "deals" not in matrix(browser, 2)["iphone 2.1"]
    browser.driver.execute_script("document.getElementById('builds').scrollIntoView();")
    browser.screenshot("32-builds-rollout")
    assert browser.log_problems() == []
