"""The processes a crash test starts and breaks: the CSMS, a private PostgreSQL, a SQLite lock.

Part of the crash test of the reference CSMS (scripts/crash-test.sh, issue 40). Standard library
only. Every process here is started by the harness and signalled by the PID it was given; nothing
listens beyond 127.0.0.1.

- `CsmsServer`: mio-server or tokio-server on fixed loopback ports (picked free once, so that a
  restart comes back where the charge points reconnect), `--database URL`; `start` waits
  (bounded) for its `... listening on ADDR (admin on ADDR)` line, `kill` sends SIGKILL (a
  crash), `stop` SIGTERM (then SIGKILL after 15 s). Each start logs to `server-N.log`.
- `PostgresCluster`: `initdb` in a temporary directory (trust on 127.0.0.1 only, fsync on), a
  free port, a database `ocpp`; `pg_ctl start`/`stop -m fast` for the outages. As root,
  PostgreSQL's programs run as the `postgres` user (else `nobody`), as
  examples/tests/common/postgres_server.rs does. Binaries: `PG_BIN`, else the highest
  /usr/lib/postgresql/*/bin, else `initdb` on the PATH.
- `hold_sqlite_lock`: another process takes the SQLite database's write lock (`BEGIN
  IMMEDIATE`), holds it, rolls back: no commit of the CSMS can succeed meanwhile.
"""

import glob
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

START_WAIT_S = 30  # the server's listening line; PostgreSQL's start (crash recovery included)
STOP_WAIT_S = 15  # a graceful stop, before SIGKILL


def free_port():
    """A TCP port free on 127.0.0.1 now (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def now_ms():
    return int(time.time() * 1000)


class CsmsServer:
    """One CSMS binary, started and restarted on the same ports and database."""

    def __init__(self, binary, name, database_url, log_dir, extra_args=()):
        self.binary = binary
        self.name = name
        self.database_url = database_url
        self.log_dir = log_dir
        self.extra_args = list(extra_args)
        self.port = free_port()
        self.admin_port = free_port()
        self.process = None
        self.starts = 0

    @property
    def url(self):
        return f"ws://127.0.0.1:{self.port}/ocpp"

    def start(self):
        """Starts the server; waits (bounded) until it listens. Retries while it exits at once
        (e.g. its database is not up yet, or the port is still held); raises after START_WAIT_S."""
        deadline = time.monotonic() + START_WAIT_S
        while True:
            self.starts += 1
            out_path = os.path.join(self.log_dir, f"server-{self.starts}.out")
            log_path = os.path.join(self.log_dir, f"server-{self.starts}.log")
            env = dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "warn"))
            with open(out_path, "wb") as out, open(log_path, "wb") as log:
                self.process = subprocess.Popen(
                    [
                        self.binary,
                        "--listen", f"127.0.0.1:{self.port}",
                        "--admin", f"127.0.0.1:{self.admin_port}",
                        "--database", self.database_url,
                        *self.extra_args,
                    ],
                    stdin=subprocess.DEVNULL, stdout=out, stderr=log, env=env,
                )
            while time.monotonic() < deadline:
                with open(out_path, "rb") as out:
                    if b"listening on" in out.readline():
                        return
                if self.process.poll() is not None:
                    break
                time.sleep(0.05)
            if self.process.poll() is None:
                self.kill()
                raise RuntimeError(f"{self.name} did not listen within {START_WAIT_S} s: see {log_path}")
            if time.monotonic() >= deadline:
                raise RuntimeError(f"{self.name} exited at start ({self.process.returncode}): see {log_path}")
            time.sleep(0.5)

    def kill(self):
        """SIGKILL, as a crash; reaps the process."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self):
        """SIGTERM (the server's clean stop), SIGKILL after STOP_WAIT_S. Returns the exit code."""
        if not self.process:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.process.returncode

    def alive(self):
        return self.process is not None and self.process.poll() is None


def postgres_bin():
    """The directory of initdb, pg_ctl, psql: PG_BIN, the highest /usr/lib/postgresql/*/bin, or
    initdb's on the PATH."""
    if os.environ.get("PG_BIN"):
        return os.environ["PG_BIN"]

    def version(path):
        name = os.path.basename(os.path.dirname(path))
        return [int(p) if p.isdigit() else 0 for p in name.split(".")]

    found = [d for d in glob.glob("/usr/lib/postgresql/*/bin") if os.path.isfile(os.path.join(d, "initdb"))]
    if found:
        return max(found, key=version)
    initdb = shutil.which("initdb")
    if initdb:
        return os.path.dirname(os.path.realpath(initdb))
    raise RuntimeError(
        "PostgreSQL not found (PG_BIN, /usr/lib/postgresql/*/bin, initdb): apt-get install -y postgresql"
    )


class PostgresCluster:
    """A private PostgreSQL cluster in a temporary directory, on a free loopback port."""

    def __init__(self):
        self.bin = postgres_bin()
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="crash-test-pg.")
        self.data = os.path.join(self.dir, "data")
        self.log = os.path.join(self.dir, "postgres.log")
        self.user = None  # (uid, gid) to run the server programs as
        if os.geteuid() == 0:
            try:
                entry = pwd.getpwnam("postgres")
            except KeyError:
                entry = pwd.getpwnam("nobody")
            self.user = (entry.pw_uid, entry.pw_gid)
            os.chown(self.dir, *self.user)
        initdb = ["initdb", "-D", self.data, "-U", "postgres", "--auth=trust", "--locale=C", "-E", "UTF8"]
        self._server(initdb, 120)
        with open(os.path.join(self.data, "postgresql.conf"), "a") as conf:
            conf.write(
                f"\n# crash test\nlisten_addresses = '127.0.0.1'\nport = {self.port}\n"
                f"unix_socket_directories = '{self.dir}'\nfsync = on\nsynchronous_commit = on\n"
            )
        with open(os.path.join(self.data, "pg_hba.conf"), "w") as hba:
            hba.write("# crash test: trust on 127.0.0.1 only\nhost all all 127.0.0.1/32 trust\n")
        self.start()
        self.psql("postgres", "CREATE DATABASE ocpp")

    @property
    def url(self):
        return f"postgres://postgres@127.0.0.1:{self.port}/ocpp"

    def _server(self, args, timeout):
        """Runs a server program (as the unprivileged user when root), bounded; raises on failure."""
        program = os.path.join(self.bin, args[0])
        kwargs = {}
        if self.user:
            kwargs = {"user": self.user[0], "group": self.user[1], "extra_groups": []}
        done = subprocess.run(
            [program, *args[1:]], stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
            cwd=self.dir, **kwargs,
        )
        if done.returncode != 0:
            error = done.stderr.decode(errors="replace")
            raise RuntimeError(f"{' '.join(args)}: exit {done.returncode}: {error}")

    def start(self):
        """pg_ctl start, waiting (bounded) until it accepts connections."""
        pg_ctl = ["pg_ctl", "-D", self.data, "-l", self.log, "-w", "-t", str(START_WAIT_S), "start"]
        self._server(pg_ctl, START_WAIT_S + 10)

    def stop(self, mode="fast"):
        """pg_ctl stop -m MODE, waiting (bounded) until the postmaster is gone."""
        pg_ctl = ["pg_ctl", "-D", self.data, "-m", mode, "-w", "-t", str(START_WAIT_S), "stop"]
        self._server(pg_ctl, START_WAIT_S + 10)

    def running(self):
        return os.path.exists(os.path.join(self.data, "postmaster.pid"))

    def psql(self, database, sql):
        """One statement through psql over TCP; its unaligned output without header."""
        done = subprocess.run(
            [os.path.join(self.bin, "psql"), f"postgres://postgres@127.0.0.1:{self.port}/{database}",
             "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql],
            stdin=subprocess.DEVNULL, capture_output=True, timeout=60,
            env=dict(os.environ, PGCONNECT_TIMEOUT="10"),
        )
        if done.returncode != 0:
            raise RuntimeError(f"psql: {sql}: {done.stderr.decode(errors='replace')}")
        return done.stdout.decode()

    def remove(self):
        """Stops the cluster if it runs, removes its directory."""
        if self.running():
            try:
                self.stop("fast")
            except (RuntimeError, subprocess.TimeoutExpired):
                self.stop("immediate")
        shutil.rmtree(self.dir, ignore_errors=True)


# Run by `hold_sqlite_lock` in a process of its own: takes the write lock, says so, holds it.
_LOCK_HOLDER = """
import sqlite3, sys, time
connection = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
connection.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
connection.execute("ROLLBACK")
connection.close()
print("released", flush=True)
"""


def hold_sqlite_lock(path, seconds):
    """Holds the write lock of the SQLite database `path` from another process for `seconds`.
    Returns (locked_ms, released_ms): when the lock was taken and given back."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _LOCK_HOLDER, path, str(seconds)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True,
    )
    try:
        if holder.stdout.readline().strip() != "locked":
            raise RuntimeError("the SQLite lock holder did not take the lock")
        locked = now_ms()
        holder.stdout.readline()  # "released"
        released = now_ms()
        holder.wait(10)
        return locked, released
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def read_rows_sqlite(path):
    """Every row of `transactions` as a dict (whatever columns the migrations made)."""
    import sqlite3

    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    connection.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in connection.execute("SELECT * FROM transactions")]
    finally:
        connection.close()


def read_rows_postgres(cluster):
    """Every row of `transactions` as a dict, through psql (one JSON object a line)."""
    text = cluster.psql("ocpp", "SELECT row_to_json(t) FROM transactions t")
    return [json.loads(line) for line in text.splitlines() if line.strip()]
