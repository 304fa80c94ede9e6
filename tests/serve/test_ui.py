"""The search page in headless Chromium against the real Serve app on 127.0.0.1.

Chromium and its driver come from Debian: `make test` installs them when it runs as root or with
passwordless sudo (`make browser`); a browser cannot be downloaded at run time. Without them this
module skips and says how to enable it, except where RAYWEAVE_TEST_REQUIRE_BROWSER=1 (CI, which
runs as root) makes a missing browser a failure. The screenshot is kept under `artifacts/ui/` as
the run's evidence.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait
from tests_support import REPO

pytestmark = [pytest.mark.browser, pytest.mark.integration]

ARTIFACTS = REPO / "artifacts" / "ui"
WAIT_S = 90

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
if not (CHROMIUM and CHROMEDRIVER):
    _found = {"chromium": CHROMIUM, "chromedriver": CHROMEDRIVER}
    _missing = " and ".join(name for name, path in _found.items() if not path)
    _why = (
        f"browser test: {_missing} not on PATH. Enable it with `sudo make browser` (Debian "
        "packages chromium and chromium-driver), then run `make test` again."
    )
    if os.environ.get("RAYWEAVE_TEST_REQUIRE_BROWSER") == "1":
        pytest.fail(_why + " (RAYWEAVE_TEST_REQUIRE_BROWSER=1: required here)", pytrace=False)
    pytest.skip(_why, allow_module_level=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    assert CHROMIUM is not None
    assert CHROMEDRIVER is not None
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(arg)
    options.add_argument("--window-size=1400,1000")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def run_search(driver: webdriver.Chrome, query: str) -> None:
    box = driver.find_element(By.ID, "q")
    box.clear()
    box.send_keys(query)
    driver.find_element(By.ID, "go").click()


def wait(driver: webdriver.Chrome) -> WebDriverWait[webdriver.Chrome]:
    return WebDriverWait(driver, WAIT_S)


def test_search_results_context_and_graph_expansion(
    app_url: str, browser: webdriver.Chrome
) -> None:
    browser.get(f"{app_url}/")
    assert browser.title == "rayweave search"
    Select(browser.find_element(By.ID, "profile")).select_by_visible_text("hybrid+graph")
    run_search(browser, "What is a lease in Ferry?")

    wait(browser).until(lambda d: d.find_elements(By.CSS_SELECTOR, "li.result .source"))
    sources = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "li.result .source")]
    # The concept page among the first two (near-tie with architecture.html: see test_app).
    assert any(s.endswith("leases.md") for s in sources[:2]), sources
    assert browser.find_elements(By.CSS_SELECTOR, "li.result mark"), "query terms highlighted"
    assert browser.find_elements(By.CSS_SELECTOR, "li.result .badge")
    assert "lease" in browser.find_element(By.ID, "context").text.lower()
    assert "results in" in browser.find_element(By.ID, "status").text

    wait(browser).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#graph circle")) > 1)
    nodes = browser.find_elements(By.CSS_SELECTOR, "#graph circle")
    assert browser.find_elements(By.CSS_SELECTOR, "#graph line.edge")
    assert browser.find_elements(By.CSS_SELECTOR, "#graph circle.start")
    before = len(nodes)
    entity = next(
        n for n in nodes if n.get_attribute("data-label") == "Entity"
    )  # an entity's other documents are one hop away
    browser.execute_script("arguments[0].dispatchEvent(new MouseEvent('click'))", entity)
    wait(browser).until(
        lambda d: (
            len(d.find_elements(By.CSS_SELECTOR, "#graph circle")) > before
            or "already" in d.find_element(By.ID, "graph-info").text
        )
    )
    after = len(browser.find_elements(By.CSS_SELECTOR, "#graph circle"))
    assert after > before, browser.find_element(By.ID, "graph-info").text

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "search.png"
    assert browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
    print(f"screenshot: {shot} ({before} -> {after} graph nodes)")


def test_empty_results_and_errors_are_visible(app_url: str, browser: webdriver.Chrome) -> None:
    browser.get(f"{app_url}/")
    # Longer than serve.max_query_chars (typed through the DOM: send_keys types key by key).
    browser.execute_script("document.getElementById('q').value = 'x'.repeat(5000)")
    browser.find_element(By.ID, "go").click()
    wait(browser).until(lambda d: "failed" in d.find_element(By.ID, "status").text)
    assert "Search failed: 400" in browser.find_element(By.ID, "status").text
    assert "limit" in browser.find_element(By.ID, "status").text
    assert "error" in (browser.find_element(By.ID, "status").get_attribute("class") or "")

    # A filter that matches nothing: the page says so instead of showing a blank list.
    browser.execute_script(
        "window.fetchOrig = window.fetch; window.fetch = (u, o) => {"
        " if (u === '/v1/search') { const b = JSON.parse(o.body);"
        " b.filters = {source: ['/nowhere/at/all.md']}; o = {...o, body: JSON.stringify(b)}; }"
        " return window.fetchOrig(u, o); };"
    )
    run_search(browser, "What is a lease?")
    wait(browser).until(lambda d: d.find_elements(By.CSS_SELECTOR, "li.result.empty"))
    assert "No results" in browser.find_element(By.CSS_SELECTOR, "li.result.empty").text


def test_artifact_folder_is_ignored_by_git() -> None:
    assert "artifacts/" in (REPO / ".gitignore").read_text().splitlines()
    assert Path(ARTIFACTS).is_relative_to(REPO)
