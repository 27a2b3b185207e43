"""A throwaway PostgreSQL cluster on 127.0.0.1 for tests and benchmarks (Debian's binaries).

``initdb`` refuses to run as root, so when this process is root the cluster is created and run
as the ``postgres`` system user (which Debian's ``postgresql`` package creates). The data
directory lives in a temporary folder; ``fsync`` is off (a throwaway cluster need not survive a
power cut, and the tests run faster); commits still reach the operating system before they
return (``synchronous_commit`` stays on), so a server killed as a crash would kill it loses no
committed row (tests/judge/store/test_store_outage.py relies on it). Used by tests/conftest.py and
bench/store_scale.py::

    with PgCluster.start() as pg:
        url = pg.create_database("judge")   # postgresql://postgres@127.0.0.1:PORT/judge
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from judge.testing.processes import Stoppable, free_port

#: Where Debian installs the server binaries (one folder per major version).
DEBIAN_BIN_GLOB = "/usr/lib/postgresql/*/bin"


class PgUnavailable(RuntimeError):
    """No PostgreSQL server binaries here (or no user to run them as)."""


def find_bin() -> Path | None:
    """The newest Debian PostgreSQL ``bin`` folder with initdb and pg_ctl, or None."""
    found = sorted(
        (Path(p) for p in glob.glob(DEBIAN_BIN_GLOB) if (Path(p) / "initdb").exists()),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    return found[-1] if found else None


@dataclass
class PgCluster(Stoppable):
    """A running throwaway cluster: its port, superuser and folder."""

    bin: Path
    root: Path
    port: int
    user: str = "postgres"
    _run_as: list[str] = field(default_factory=list)

    @classmethod
    def start(cls, bin_dir: Path | None = None) -> PgCluster:
        """initdb into a temporary folder and start the server on a free 127.0.0.1 port."""
        bin_dir = bin_dir or find_bin()
        if bin_dir is None:
            raise PgUnavailable(
                f"no PostgreSQL server binaries under {DEBIAN_BIN_GLOB} "
                "(install them with `apt-get install -y postgresql`)"
            )
        run_as: list[str] = []
        if os.geteuid() == 0:
            if shutil.which("runuser") is None:
                raise PgUnavailable("running as root without `runuser` to drop to `postgres`")
            try:
                pwd.getpwnam("postgres")
            except KeyError as err:
                raise PgUnavailable("running as root and there is no `postgres` user") from err
            run_as = ["runuser", "-u", "postgres", "--"]
        root = Path(tempfile.mkdtemp(prefix="judge-pg-"))
        root.chmod(0o755)
        data, sock = root / "data", root / "sock"
        data.mkdir()
        sock.mkdir()
        if run_as:
            shutil.chown(data, "postgres")
            shutil.chown(sock, "postgres")
        cluster = cls(bin=bin_dir, root=root, port=free_port(), _run_as=run_as)
        try:
            cluster._run(
                "initdb",
                "-D",
                str(data),
                "-A",
                "trust",
                "-U",
                cluster.user,
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C",
            )
            cluster.resume()
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        return cluster

    def resume(self) -> None:
        """Start the server (again, after ``pause``) on the same port and data."""
        data, sock = self.root / "data", self.root / "sock"
        options = (
            f"-p {self.port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c full_page_writes=off -c max_connections=200"
        )
        self._run(
            "pg_ctl",
            "-D",
            str(data),
            "-l",
            str(data / "log.txt"),
            "-w",
            "-t",
            "60",
            "start",
            "-o",
            options,
        )

    def pause(self) -> None:
        """Stop the server at once, as a crash would, keeping its data (``resume`` restarts)."""
        self._run("pg_ctl", "-D", str(self.root / "data"), "-w", "-m", "immediate", "stop")

    def _run(self, tool: str, *args: str) -> str:
        done = subprocess.run(
            [*self._run_as, str(self.bin / tool), *args],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=self.root,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed ({done.returncode}): {done.stderr.strip()}")
        return done.stdout

    def url(self, database: str = "postgres") -> str:
        """The URL of one database of this cluster."""
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def sql(self, statement: str) -> str:
        """Run one statement as the superuser on the ``postgres`` database, through psql (only
        the store talks to databases through a driver); its output."""
        done = subprocess.run(
            [
                str(self.bin / "psql"),
                "-X",
                "-q",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-U",
                self.user,
                "-d",
                "postgres",
                "-c",
                statement,
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if done.returncode != 0:
            raise RuntimeError(f"psql failed: {done.stderr.strip()}")
        return done.stdout

    def create_database(self, name: str | None = None) -> str:
        """A new, empty database; its URL."""
        name = name or "t_" + uuid.uuid4().hex[:12]
        self.sql(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def drop_database(self, name: str) -> None:
        """Drop a database, ending its connections."""
        self.sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        """Stop the server at once and delete its folder."""
        try:
            if (self.root / "data" / "postmaster.pid").exists():  # not paused
                self._run("pg_ctl", "-D", str(self.root / "data"), "-w", "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
