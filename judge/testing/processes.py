"""Processes of the tests and benchmarks: the ones a run started (read from /proc, Linux: to
measure their CPU or to end them), free loopback ports, and the lifecycle every throwaway server
shares: :class:`Stoppable` (``with X.start(...) as x:`` stops it) and :class:`LocalServer` (a
server run from its own virtualenv in a folder of its own, with a log, ready when a path answers
200: MLflow's and Phoenix's)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, ClassVar, Self

from judge.base import Closing


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc): a process pool's workers, a local Ray."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def free_port(*, every_interface: bool = False) -> int:
    """A TCP port free now on 127.0.0.1; ``every_interface``: free on every interface (IPv6 too
    where there is IPv6), for a server that binds them all."""
    if every_interface:
        family, host = (socket.AF_INET6 if socket.has_ipv6 else socket.AF_INET), ""
    else:
        family, host = socket.AF_INET, "127.0.0.1"
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class Stoppable(Closing, ABC):
    """Something a test started and :meth:`stop` ends: used as a context manager, it is stopped
    when the block ends."""

    @abstractmethod
    def stop(self) -> None:
        """End it and remove what it left behind."""

    def close(self) -> None:
        """The same as :meth:`stop` (what the block's end calls)."""
        self.stop()


@dataclass
class LocalServer(Stoppable):
    """A running throwaway server on a loopback port: its process (None for one already running,
    which :meth:`stop` leaves alone), port and temporary folder (its data and ``server.log``).

    A subclass names its program, the virtualenv it comes from and its readiness path."""

    process: subprocess.Popen[bytes] | None
    port: int
    root: Path
    started_s: float = 0.0
    _log: IO[bytes] | None = field(default=None, repr=False)

    #: The executable in the virtualenv's ``bin/`` (and the make target that builds
    #: ``.venv-PROGRAM``), and its subcommand that serves.
    program: ClassVar[str]
    serve: ClassVar[str]
    #: The pinned requirement the virtualenv holds, and the environment variable naming another
    #: virtualenv.
    requirement: ClassVar[str]
    venv_env: ClassVar[str]
    #: The prefix of the server's own environment variables (none is inherited from here).
    env_prefix: ClassVar[str]
    #: The path that answers 200 once the server is ready.
    ready_path: ClassVar[str]
    #: What is raised when the server is missing or does not start.
    unavailable: ClassVar[type[RuntimeError]]
    #: The path of the things a judge target URL names on this server (``/projects``).
    targets: ClassVar[str]

    @property
    def url(self) -> str:
        """The HTTP root, ``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    def target(self, name: str) -> str:
        """The judge target URL of ``name`` (a project, an experiment id) on this server:
        ``PROGRAM+http://127.0.0.1:PORT/TARGETS/NAME``."""
        return f"{self.program}+{self.url}{self.targets}/{name}"

    @property
    def log(self) -> Path:
        """The server's log file."""
        return self.root / "server.log"

    @classmethod
    def find(cls, repo: Path) -> Path:
        """The program in ``$VENV_ENV`` or in ``repo/.venv-PROGRAM``."""
        venv = Path(os.environ.get(cls.venv_env) or repo / f".venv-{cls.program}")
        executable = venv / "bin" / cls.program
        if not executable.exists():
            raise cls.unavailable(
                f"{executable} is missing: `make {cls.program}` builds "
                f"{repo / f'.venv-{cls.program}'} with {cls.requirement} (or set {cls.venv_env} "
                "to a virtualenv that has it)"
            )
        return executable

    @classmethod
    def folder(cls) -> Path:
        """A new temporary folder for a server of this kind."""
        return Path(tempfile.mkdtemp(prefix=f"judge-{cls.program}-"))

    @classmethod
    def attach(cls, url: str) -> Self:
        """A server already running at ``http://127.0.0.1:PORT`` (not stopped by stop())."""
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        return cls(process=None, port=port, root=cls.folder())

    @classmethod
    def launch(
        cls,
        executable: Path,
        arguments: Sequence[str],
        *,
        root: Path,
        port: int,
        settings: Mapping[str, str],
        timeout_s: float,
        cwd: Path | None = None,
        **fields: Any,
    ) -> Self:
        """Run ``executable SERVE arguments`` in a session of its own (its output in the log),
        with this environment less the server's own variables plus ``settings``, and wait until
        the readiness path answers 200. ``unavailable`` (with the log's end) when it exits first
        or does not answer within ``timeout_s``; ``fields``: the subclass's own."""
        import httpx

        env = {k: v for k, v in os.environ.items() if not k.startswith(cls.env_prefix)}
        env.update(settings)
        log = (root / "server.log").open("wb")
        began = time.monotonic()
        process = subprocess.Popen(
            [str(executable), cls.serve, *arguments],
            cwd=cwd,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        server = cls(process=process, port=port, root=root, _log=log, **fields)
        name = f"{cls.program} {cls.serve}"
        deadline = began + timeout_s
        while time.monotonic() < deadline:
            if process.poll() is not None:
                tail = server.log.read_text(errors="replace")[-2000:]
                server.stop()
                raise cls.unavailable(f"{name} exited ({process.returncode}): {tail}")
            try:
                if httpx.get(server.url + cls.ready_path, timeout=2.0).status_code == 200:
                    server.started_s = time.monotonic() - began
                    return server
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        server.stop()
        raise cls.unavailable(
            f"{name} did not answer {cls.ready_path} within {timeout_s:.0f}s (log: {server.log})"
        )

    def stop(self, *, keep_files: bool = False) -> None:
        """Stop the server (its whole process group: a server and its workers) and remove its
        folder."""
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        if self._log is not None:
            self._log.close()
        if not keep_files:
            shutil.rmtree(self.root, ignore_errors=True)
