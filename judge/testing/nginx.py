"""A throwaway nginx on loopback in front of `judge serve` replicas, for tests (Debian's nginx).

The configuration is DEPLOY.md's own: :func:`deploy_block` takes the fenced ``nginx`` block that
follows the marker ``<!-- nginx -->`` there, and :func:`for_loopback` puts loopback addresses in
place of its example ones (the replicas' ``server`` lines of the upstream, the ``listen``
port), nothing else. :class:`Nginx` wraps it in a minimal main configuration (``events``, an
``http`` block with temp folders and an access log that names the upstream of each request) in
a temporary folder and runs ``nginx -g 'daemon off;'`` in the foreground::

    block = for_loopback(deploy_block(Path("DEPLOY.md").read_text()), port, [a, b])
    with Nginx.start(block, port) as proxy:
        httpx.get(proxy.url + "/healthz")
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from judge.testing.processes import Stoppable

#: Where Debian installs nginx.
NGINX = Path("/usr/sbin/nginx")
#: The marker before the tested configuration in DEPLOY.md.
MARKER = "<!-- nginx -->"
_BLOCK = re.compile(re.escape(MARKER) + r"\s*```nginx\n(.*?)```", re.S)
_LISTEN = re.compile(r"^(\s*listen\s+)[^;]+;", re.M)
_SERVER = re.compile(r"^(\s*server\s+)(\S+:\d+)([^;]*;)", re.M)


class NginxUnavailable(RuntimeError):
    """nginx is not installed here."""


def deploy_block(markdown: str) -> str:
    """The nginx configuration DEPLOY.md gives (the fenced block after its marker)."""
    found = _BLOCK.search(markdown)
    if found is None:
        raise ValueError(f"no ```nginx block after {MARKER} in the document")
    return found.group(1)


def for_loopback(block: str, port: int, replicas: list[str]) -> str:
    """``block`` with ``listen`` on 127.0.0.1:``port`` and the upstream's ``server`` lines on
    ``replicas`` (``127.0.0.1:PORT`` each, in order); ValueError when the counts differ."""
    servers = _SERVER.findall(block)
    if len(servers) != len(replicas):
        raise ValueError(f"the block has {len(servers)} upstream servers, not {len(replicas)}")
    it = iter(replicas)
    block = _SERVER.sub(lambda m: f"{m.group(1)}{next(it)}{m.group(3)}", block)
    return _LISTEN.sub(lambda m: f"{m.group(1)}127.0.0.1:{port};", block)


@dataclass
class Nginx(Stoppable):
    """A running nginx: its URL, folder and process."""

    root: Path
    port: int
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        """The proxy's base URL."""
        return f"http://127.0.0.1:{self.port}"

    @classmethod
    def start(cls, block: str, port: int) -> Nginx:
        """Run nginx with ``block`` (an ``http``-level fragment: upstream and server) on
        ``port``; wait until it accepts connections."""
        if not NGINX.exists() and shutil.which("nginx") is None:
            raise NginxUnavailable(
                f"no nginx at {NGINX} (install it with `apt-get install -y nginx`; "
                "`make test` does when run as root)"
            )
        binary = str(NGINX if NGINX.exists() else shutil.which("nginx"))
        root = Path(tempfile.mkdtemp(prefix="judge-nginx-"))
        for name in ("body", "proxy", "fastcgi", "uwsgi", "scgi", "logs"):
            (root / name).mkdir()
        user = "user root;\n" if os.geteuid() == 0 else ""
        (root / "nginx.conf").write_text(
            f"{user}worker_processes 1;\nerror_log {root}/logs/error.log warn;\n"
            f"pid {root}/nginx.pid;\nevents {{ worker_connections 256; }}\n"
            "http {\n"
            "    log_format judge '$request $status upstream=$upstream_addr';\n"
            f"    access_log {root}/logs/access.log judge;\n"
            f"    client_body_temp_path {root}/body;\n"
            f"    proxy_temp_path {root}/proxy;\n"
            f"    fastcgi_temp_path {root}/fastcgi;\n"
            f"    uwsgi_temp_path {root}/uwsgi;\n"
            f"    scgi_temp_path {root}/scgi;\n"
            f"{block}\n}}\n"
        )
        check = subprocess.run(
            [binary, "-t", "-p", str(root), "-c", str(root / "nginx.conf")],
            capture_output=True,
            text=True,
        )
        if check.returncode != 0:
            shutil.rmtree(root, ignore_errors=True)
            raise RuntimeError(f"nginx refused the configuration: {check.stderr.strip()}")
        process = subprocess.Popen(
            [binary, "-p", str(root), "-c", str(root / "nginx.conf"), "-g", "daemon off;"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        proxy = cls(root, port, process)
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return proxy
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    log = proxy.error_log()
                    proxy.stop()
                    raise RuntimeError(f"nginx did not start: {log[-2000:]}") from None
                time.sleep(0.05)

    def access_log(self) -> list[str]:
        """The access log's lines so far (``REQUEST STATUS upstream=ADDR``)."""
        path = self.root / "logs" / "access.log"
        return path.read_text().splitlines() if path.exists() else []

    def error_log(self) -> str:
        """The error log so far."""
        path = self.root / "logs" / "error.log"
        return path.read_text() if path.exists() else ""

    def stop(self) -> None:
        """Stop nginx (quit, then kill) and delete its folder."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        shutil.rmtree(self.root, ignore_errors=True)
