"""Behind a reverse proxy: forwarded headers from trusted proxies only, and the page's origin.

A proxy (nginx, HAProxy, a cloud load balancer) connects to the service itself, so the client
address, the scheme and the host the browser used reach the service only in headers the proxy
adds: ``X-Forwarded-For``, ``X-Forwarded-Proto``, ``X-Forwarded-Host``, ``X-Forwarded-Port``
or the standard ``Forwarded`` (RFC 7239). Any client can send those headers too, so they are
read only when the connection comes from an address of ``judge serve --trusted-proxy`` (CIDRs
or addresses); from anyone else they are dropped before any route sees them.

From a trusted proxy: the client address is the rightmost address of the chain that is not a
trusted proxy itself; the scheme, host and port are the ones the nearest proxy (the rightmost
value) says. The request is then seen as the browser made it: its scheme (``https`` cookies
are Secure), and a Host with the port the browser used, which the Origin check of page forms
compares with the browser's Origin (``judge.api.security.origin_problem``).

``--public-url https://judge.example.org`` names the origin the pages are served from, whatever
the proxy sends: the Origin check accepts it and cookies are Secure when it is https.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, Iterable, MutableMapping, Sequence
from typing import Any
from urllib.parse import urlsplit

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Request headers that only a trusted proxy may set.
FORWARDED_HEADERS = frozenset(
    {
        b"forwarded",
        b"x-forwarded-for",
        b"x-forwarded-proto",
        b"x-forwarded-host",
        b"x-forwarded-port",
        b"x-real-ip",
    }
)

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
_DEFAULT_PORTS = {"http": "80", "https": "443"}


def parse_networks(values: Iterable[str]) -> tuple[Network, ...]:
    """CIDRs or addresses (``10.0.0.0/8``, ``127.0.0.1``, ``::1``) as networks; ValueError names
    the one that is neither."""
    found = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if not part:
                continue
            try:
                found.append(ipaddress.ip_network(part, strict=False))
            except ValueError as err:
                raise ValueError(
                    f"{part!r} is not an IP address or a CIDR (e.g. 127.0.0.1, 10.0.0.0/8)"
                ) from err
    return tuple(found)


def normal_origin(value: str) -> str:
    """An origin as browsers compare them: lower case, no path, no default port."""
    parts = urlsplit(value.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    shown = f":{port}" if port is not None and str(port) != _DEFAULT_PORTS.get(scheme) else ""
    return f"{scheme}://{host}{shown}"


def host_origin(scheme: str, host: str) -> str:
    """The origin a request's scheme and Host header name."""
    return normal_origin(f"{scheme}://{host}") if host else f"{scheme}://"


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    text = text.strip().strip('"')
    if text.startswith("["):  # [v6]:port
        text = text[1 : text.find("]")] if "]" in text else text
    elif text.count(":") == 1:  # v4:port
        text = text.split(":")[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _forwarded_elements(value: str) -> list[dict[str, str]]:
    """RFC 7239 ``Forwarded``: one dict per element (for, proto, host, by), left to right."""
    elements = []
    for element in value.split(","):
        pairs: dict[str, str] = {}
        for pair in element.split(";"):
            name, _, val = pair.partition("=")
            if name.strip():
                pairs[name.strip().lower()] = val.strip().strip('"')
        elements.append(pairs)
    return elements


def _last(value: str | None) -> str | None:
    if value is None:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    return items[-1] if items else None


class ProxyHeaders:
    """Honour forwarded headers from trusted proxies; drop them from everyone else."""

    def __init__(self, app: ASGIApp, *, trusted: Sequence[Network]) -> None:
        self.app = app
        self.trusted = tuple(trusted)

    def is_trusted(self, address: str | None) -> bool:
        """Whether a peer address is one of the trusted proxies."""
        ip = _ip(address) if address else None
        return ip is not None and any(ip in net for net in self.trusted)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        if self.trusted and client and self.is_trusted(client[0]):
            self._apply(scope)
        scope["headers"] = [(k, v) for k, v in scope["headers"] if k not in FORWARDED_HEADERS]
        await self.app(scope, receive, send)

    def _apply(self, scope: Scope) -> None:
        headers: dict[str, str] = {}
        for key, value in scope["headers"]:
            name = key.decode("latin-1").lower()
            text = value.decode("latin-1")
            headers[name] = f"{headers[name]}, {text}" if name in headers else text
        chain: list[str] = []
        proto = host = port = None
        if "forwarded" in headers:
            elements = _forwarded_elements(headers["forwarded"])
            chain = [e["for"] for e in elements if "for" in e]
            proto = next((e["proto"] for e in reversed(elements) if "proto" in e), None)
            host = next((e["host"] for e in reversed(elements) if "host" in e), None)
        else:
            chain = [v.strip() for v in headers.get("x-forwarded-for", "").split(",") if v.strip()]
            proto = _last(headers.get("x-forwarded-proto"))
            host = _last(headers.get("x-forwarded-host"))
            port = _last(headers.get("x-forwarded-port"))
        client = None
        for entry in reversed(chain):
            client = entry
            if not self.is_trusted(entry):
                break
        if client is not None and _ip(client) is not None:
            scope["client"] = (str(_ip(client)), 0)
        if proto and proto.lower() in ("http", "https"):
            scheme = proto.lower()
            if scope["type"] == "websocket":
                scheme = "wss" if scheme == "https" else "ws"
            scope["scheme"] = scheme
        host = host or headers.get("host")
        if host and port and port.isdigit() and ":" not in host.split("]")[-1]:
            # A host without its port (nginx's $host) plus the port the proxy listens on.
            web = "https" if scope.get("scheme") in ("https", "wss") else "http"
            if port != _DEFAULT_PORTS[web]:
                host = f"{host}:{port}"
        if host:
            scope["headers"] = [(k, v) for k, v in scope["headers"] if k != b"host"] + [
                (b"host", host.encode("latin-1"))
            ]
