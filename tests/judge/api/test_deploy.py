"""DEPLOY.md followed as written, on this machine: its nginx block (addresses replaced by
loopback ports, nothing else) in front of two real `judge serve` replicas on a throwaway
PostgreSQL, the loopback model server answering over HTTP.

- the health checks answer through the proxy;
- 20 logins in a row, each form served by one replica and posted to the other (nginx's round
  robin, checked in its access log), in httpx, and two in headless Chromium;
- DEPLOY.md's example job body, posted as written (a gold record: accepted), is judged;
- a 1.4 MB job of 40 cases passes the proxy; a body over --max-body-mb gets judge's JSON 413,
  one over nginx's limit nginx's own;
- the replica holding the 40-case job is SIGKILLed: the other takes it over within seconds
  (not when its 60 s lease ends), says so in its log, keeps its start, its progress never goes
  back, pays at most the calls in flight again; logins through the proxy go on working.

Skipped without nginx or PostgreSQL, except under CI=true, where both must run.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from judge.store import Store
from judge.testing.loopback import LoopbackServer, Reply
from judge.testing.nginx import Nginx, NginxUnavailable, deploy_block, for_loopback
from judge.testing.processes import free_port
from tests.conftest import CHROMIUM, CHROMIUM_ARGS, REPO
from tests.judge.api.test_replicas import _keys, _ready, replicas
from tests.review_fixtures import form_token, responder, scripted_case

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.nginx]

DEPLOY = REPO / "DEPLOY.md"
#: As DEPLOY.md's systemd unit and nginx block assume, with a quicker heartbeat than the
#: defaults so that the test is short; the lease stays the default 60 s, so a takeover within
#: seconds can only come from the heartbeat.
ENV = {
    "JUDGE_JOB_LEASE_S": "60",
    "JUDGE_REPLICA_BEAT_S": "0.5",
    "JUDGE_REPLICA_DEAD_S": "3",
    "JUDGE_JOB_POLL_S": "0.3",
}
#: The loopback model's delay per call: slow enough to kill a replica mid-job.
DELAY_S = 0.25


def _nginx_block(port: int, bases: list[str]) -> str:
    block = deploy_block(DEPLOY.read_text(encoding="utf-8"))
    return for_loopback(block, port, [b.removeprefix("http://") for b in bases])


@pytest.fixture
def nginx_ready() -> None:
    """Skip without nginx, except in CI."""
    if Path("/usr/sbin/nginx").exists():
        return
    reason = "nginx is missing (apt-get install -y nginx; `make test` installs it as root)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true and the nginx tests cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


def _slow(request: dict[str, Any]) -> Reply:
    reply: Reply = responder(request)
    reply.delay_s = DELAY_S
    return reply


def _login(proxy: str, key: str) -> httpx.Response:
    with httpx.Client(base_url=proxy, follow_redirects=False, timeout=60) as http:
        form = http.get("/login", params={"next": "/review"})
        assert form.status_code == 200, form.text
        r = http.post(
            "/login",
            data={"key": key, "next": "/review", "csrf_token": form_token(form.text)},
            headers={"origin": proxy},
        )
        if r.status_code == 303:
            # The session works through the proxy, whichever replica answers.
            assert http.get("/review").status_code == 200
        return r


def _logins_alternate(log: list[str]) -> list[tuple[str, str]]:
    """(upstream of GET /login, upstream of POST /login) for each login in the access log."""
    pairs, served = [], None
    for line in log:
        upstream = line.rsplit("upstream=", 1)[-1]
        if line.startswith("GET /login"):
            served = upstream
        elif line.startswith("POST /login") and served is not None:
            pairs.append((served, upstream))
            served = None
    return pairs


def _big_job(n: int = 40) -> dict[str, Any]:
    """n cases of about 35 KB each (a long test log in the trace): about 1.4 MB."""
    cases = []
    for i in range(n):
        case = scripted_case(1000 + i, 0.9).model_dump(mode="json")
        lines = [f"tests/test_mod_{i}.py::test_{k} PASSED [{k % 100:3d}%]" for k in range(700)]
        case["trace"].append({"id": "log", "role": "tool", "content": "\n".join(lines)})
        cases.append(case)
    return {"rubric": "agent-run-success", "cases": cases}


def _when(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


@pytest.fixture
def browser_or_none() -> Iterator[Any]:
    """Headless Chromium when it is installed (CI has it), else None."""
    if not CHROMIUM.exists():
        yield None
        return
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


def test_deploy_md_nginx_two_replicas_logins_jobs_and_a_killed_replica(
    pg_url: str, tmp_path: Path, nginx_ready: None, browser_or_none: Any
) -> None:
    keys = _keys(pg_url)
    client = {"Authorization": f"Bearer {keys['dan']}"}
    extra = ("--trusted-proxy", "127.0.0.1", "--max-body-mb", "5")
    with (
        LoopbackServer(_slow) as model,
        replicas(pg_url, 2, tmp_path, model.api_base, extra=extra, env=ENV) as procs,
    ):
        for proc, base in procs:
            _ready(base, keys["ann"], proc, tmp_path)
        port = free_port()
        try:
            proxy_ctx = Nginx.start(_nginx_block(port, [b for _, b in procs]), port)
        except NginxUnavailable as err:
            pytest.skip(str(err))
        with proxy_ctx as proxy:
            url = proxy.url
            # Health checks, no key.
            assert httpx.get(url + "/healthz", timeout=30).json()["status"] == "ok"
            assert httpx.get(url + "/readyz", timeout=30).json()["status"] == "ready"
            assert httpx.get(url + "/favicon.ico", timeout=30).status_code == 200
            # 20 logins; every other one shifted by a request, so that forms go both ways.
            for i in range(20):
                if i % 2:
                    httpx.get(url + "/healthz", timeout=30)
                r = _login(url, keys["ann"] if i % 3 else keys["bob"])
                assert r.status_code == 303 and "judge_session" in r.cookies, (i, r.text)
            pairs = _logins_alternate(proxy.access_log())
            assert len(pairs) == 20
            assert all(get != post for get, post in pairs), pairs  # strict alternation
            assert len({get for get, _ in pairs}) == 2  # forms served by both replicas
            # Two logins in headless Chromium, through the proxy.
            if browser_or_none is not None:
                for who in ("ann", "bob"):
                    page = browser_or_none.new_page()
                    page.goto(url + "/login?next=/review")
                    page.fill("#key", keys[who])
                    page.click("button[type=submit]")
                    page.wait_for_url(re.compile(r".*/review$"), timeout=60_000)
                    assert "Log in" not in page.title()
                    page.close()
            # DEPLOY.md's job body, as written.
            example = json.loads(_fenced(DEPLOY.read_text(encoding="utf-8"), "job", "json"))
            r = httpx.post(url + "/v1/jobs", json=example, headers=client, timeout=60)
            assert r.status_code == 202, r.text
            _wait(url, r.json()["id"], client, 60)
            # Body limits: judge's own JSON 413 under nginx's limit, nginx's HTML 413 over it.
            padding = {"rubric": "agent-run-success", "cases": [], "pad": "x" * (5_500_000)}
            r = httpx.post(url + "/v1/jobs", json=padding, headers=client, timeout=60)
            assert r.status_code == 413 and r.json()["error"]["code"] == "payload_too_large"
            padding["pad"] = "x" * 7_000_000
            r = httpx.post(url + "/v1/jobs", json=padding, headers=client, timeout=60)
            assert r.status_code == 413 and r.headers["content-type"].startswith("text/html")
            # The 1.4 MB job, and a replica killed while it holds it.
            body = _big_job()
            size = len(json.dumps(body).encode())
            assert 1_300_000 < size < 1_600_000, size
            calls_before = len(model.requests)
            r = httpx.post(url + "/v1/jobs", json=body, headers=client, timeout=60)
            assert r.status_code == 202, r.text
            job_id = r.json()["id"]
            seen, holder, _ = _watch_until(pg_url, job_id, lambda row: row["n_done"] >= 30)
            pids = {str(p.pid): p for p, _ in procs}
            victim = pids[holder["lease_owner"].split(":")[1]]
            os.kill(victim.pid, signal.SIGKILL)
            victim.wait(10)
            killed = time.monotonic()
            survivor = next(p for p, _ in procs if p is not victim)
            # While it is taken over, the proxy still serves (nginx skips the dead replica).
            for _ in range(3):
                assert httpx.get(url + "/readyz", timeout=30).status_code == 200
            more, taker, _ = _watch_until(
                pg_url, job_id, lambda row: row["lease_owner"] not in (None, holder["lease_owner"])
            )
            took_s = time.monotonic() - killed
            assert took_s < 20, f"taken over {took_s:.1f}s after the kill (the lease is 60 s)"
            seen += more
            # Progress through the API, via the proxy, while the survivor finishes.
            shown = [_job(url, job_id, client)]
            while shown[-1]["status"] != "done":
                assert time.monotonic() - killed < 120, shown[-1]
                time.sleep(0.2)
                shown.append(_job(url, job_id, client))
            done = shown[-1]
            progress = [row["n_done"] for row in seen] + [j["n_done"] for j in shown]
            assert progress == sorted(progress), progress  # never back to 0
            assert done["n_done"] == done["n_steps"] == 120 and done["counts"]["ok"] == 120
            assert done["attempts"] == 2 and done["taken_over_at"] is not None
            assert _when(done["started_at"]) == _when(holder["started_at"])  # not overwritten
            assert taker["lease_owner"].split(":")[1] == str(survivor.pid)
            # The survivor's log names the takeover and what was already stored.
            log = "\n".join(p.read_text(errors="replace") for p in tmp_path.glob("replica-*.log"))
            found = re.search(rf"job {job_id} taken over by \S+ from \S+ .*?(\d+) judgment", log)
            assert found is not None, log[-3000:]
            assert int(found.group(1)) >= 30
            # Paid again: at most the calls in flight in the dead replica (a job runs on one
            # worker: its --concurrency, 4).
            paid = len(model.requests) - calls_before
            assert 120 <= paid <= 120 + 4, paid
            # Logins through the proxy go on working with one replica left.
            for _ in range(4):
                assert _login(url, keys["ann"]).status_code == 303
    print(f"taken over {took_s:.1f}s after the kill; {paid} calls for 120 judgments")


def _fenced(markdown: str, marker: str, language: str) -> str:
    found = re.search(rf"<!-- {marker} -->\s*```{language}\n(.*?)```", markdown, re.S)
    assert found is not None, f"no ```{language} block after <!-- {marker} -->"
    return found.group(1)


def _job(url: str, job_id: str, headers: dict[str, str]) -> dict[str, Any]:
    r = httpx.get(f"{url}/v1/jobs/{job_id}", headers=headers, timeout=30)
    assert r.status_code == 200, r.text
    job: dict[str, Any] = r.json()
    return job


def _wait(url: str, job_id: str, headers: dict[str, str], timeout_s: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while (job := _job(url, job_id, headers))["status"] not in ("done", "failed"):
        assert time.monotonic() < deadline, job
        time.sleep(0.2)
    assert job["status"] == "done", job
    return job


def _watch_until(
    url: str, job_id: str, stop: Any, timeout_s: float = 120
) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """Rows of the job's lease and progress until ``stop(row)``: (rows, that row, the first)."""
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout_s
    with Store(url) as store:
        while True:
            row = next(r for r in store.job_leases() if r["id"] == job_id)
            seen.append(row)
            if row["lease_owner"] is not None and stop(row):
                return seen, row, seen[0]
            assert time.monotonic() < deadline, row
            time.sleep(0.05)
