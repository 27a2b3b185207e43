"""Label every item of the review queue in the real review page, in headless Chromium.

    python bench/review_walkthrough.py --url http://127.0.0.1:8321 --key KEY --gold gold/demo.jsonl

A scripted reviewer for the end-to-end walkthrough (issue: route, review, export, recalibrate):
it logs in with an API key, opens the queue, and labels each item with the keyboard shortcut of
the label that the gold file gives for it (P, F, or C when the gold file has no label), as an
expert who knows the outcome would. It prints each label and the queue size after each one.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
KEYS = {"pass": "p", "fail": "f", "A": "a", "B": "b", "tie": "t"}


def main() -> None:
    """Log in and label the whole queue."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--gold", required=True)
    parser.add_argument("--screenshot", default="")
    args = parser.parse_args()
    gold = {}
    for line in Path(args.gold).read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            gold[record["id"]] = record["gold"]

    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.goto(args.url + "/review")
        page.fill("#key", args.key)
        page.click("button[type=submit]")
        page.wait_for_url(args.url + "/review")
        labelled = 0
        while page.locator("#queue tbody tr").count():
            left = page.locator("#queue tbody tr").count()
            page.keyboard.press("Enter")  # open the first (most uncertain) item
            page.wait_for_url("**/review/items/*")
            case_id = page.locator("h1").first.inner_text().split()[0]
            if args.screenshot and labelled == 0:
                page.screenshot(path=args.screenshot, full_page=True)
            label = gold.get(case_id)
            before = page.url
            page.keyboard.press(KEYS.get(label or "", "c"))
            page.wait_for_url(lambda url: url != before)  # noqa: B023 (used at once)
            labelled += 1
            print(f"labelled {case_id}: {label or 'cannot determine'} ({left - 1} left)")
            page.goto(args.url + "/review")
        print(
            f"{labelled} items labelled; queue rows left: {page.locator('#queue tbody tr').count()}"
        )
        browser.close()
    sys.exit(0 if labelled else 1)


if __name__ == "__main__":
    main()
