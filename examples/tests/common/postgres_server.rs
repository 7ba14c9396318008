//! A PostgreSQL server of a test's own: a fresh cluster (`initdb`) in a temporary directory, a
//! free loopback port, a database `ocpp`; the postmaster is stopped by its PID when dropped (also
//! on panic) and the directory removed. Std and rustix only.
//!
//! - **Binaries**: the directory `PG_BIN` if set, else `pg_config --bindir`, else the highest
//!   version of `/usr/lib/postgresql/*/bin` (Debian's layout), else `initdb` on the PATH (its
//!   symlinks resolved, so that `psql` and `pg_isready` are taken from beside it). Without
//!   PostgreSQL the test panics and says how to install it (`apt-get install -y postgresql`):
//!   it is never skipped.
//! - **Root**: PostgreSQL refuses to run as root, and the tests (CI) run as root. Then `initdb`
//!   and `postgres` run as the `postgres` system user if there is one (Debian's package creates
//!   it), else as `nobody`: the child's uid and gid are set by `std`'s `CommandExt::uid`/`gid`
//!   (supplementary groups dropped), so no `runuser`/`setpriv` stands between the test and the
//!   postmaster and the PID the test holds is the postmaster's. The temporary directory (mode
//!   0700) is chowned to that user; the system's temporary directory must be searchable by it
//!   (`/tmp` is). `psql` and `pg_isready` run as the test itself, over TCP. As any other user,
//!   everything runs as that user.
//! - **Cluster**: superuser `postgres`, trust authentication on `127.0.0.1/32` only (no other
//!   `pg_hba.conf` line: the Unix socket, in the temporary directory, is not usable),
//!   `listen_addresses = '127.0.0.1'`, `fsync = on`, `synchronous_commit = on`; server log in
//!   `postgres.log` beside the data directory (its last lines are shown when a start fails).
//! - **Crash**: [`PostgresServer::kill`] sends SIGKILL to the postmaster only, as a crash of it
//!   would; its children (checkpointer, WAL writer, backends) notice the postmaster's death and
//!   exit by themselves, and `kill` waits for them (bounded), so that nothing of the server runs
//!   when it returns and [`PostgresServer::restart`] finds no old process attached to the old
//!   shared memory. The restart then runs crash recovery from the WAL.
#![allow(dead_code, unreachable_pub)]

use std::io::{Read, Seek, SeekFrom};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustix::process::{kill_process, Pid, Signal};

/// How long the server may take to accept connections (after a crash too: recovery), and a
/// `psql` command to finish.
const WAIT: Duration = Duration::from_secs(30);
/// How long `initdb` may take (it writes and syncs a whole cluster).
const INITDB_WAIT: Duration = Duration::from_secs(60);
/// How long the processes of a stopped server may take to exit.
const EXIT_WAIT: Duration = Duration::from_secs(10);
/// The cluster's superuser (`initdb -U`), the user in [`PostgresServer::url`].
const SUPERUSER: &str = "postgres";
/// The database [`PostgresServer::start`] creates, the one in [`PostgresServer::url`].
const DATABASE: &str = "ocpp";
const INSTALL: &str = "install it (Debian/Ubuntu: apt-get install -y postgresql) or set PG_BIN \
                       to the directory of its initdb and postgres";

/// A PostgreSQL postmaster child process on `127.0.0.1:port`, stopped (by its PID) and its
/// temporary directory removed when dropped, also on panic.
#[derive(Debug)]
pub struct PostgresServer {
    /// The loopback port it listens on (the same after [`restart`](Self::restart)).
    pub port: u16,
    /// `postgres://postgres@127.0.0.1:PORT/ocpp` (trust authentication: no password).
    pub url: String,
    child: Option<Child>,
    /// The temporary directory: `data/` (the cluster), the Unix socket, `postgres.log`.
    dir: PathBuf,
    /// Where initdb and postgres are (and psql, pg_isready: see `client`).
    bin: PathBuf,
    /// The user the server runs as when the test runs as root: (name, uid, gid).
    user: Option<(String, u32, u32)>,
}

/// A loopback port free at the time of asking.
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local addr").port()
}

impl PostgresServer {
    /// Creates a cluster in a fresh temporary directory, starts it on a free loopback port,
    /// waits (bounded) until it accepts connections and creates the database `ocpp`.
    pub fn start() -> PostgresServer {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let bin = bin_dir();
        let port = free_port();
        let dir = std::env::temp_dir().join(format!(
            "ocpp-postgres-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("create the temp dir {}: {e}", dir.display()));
        // From here on, Drop removes the directory (and stops the server) on a panic.
        let mut server = PostgresServer {
            port,
            url: format!("postgres://{SUPERUSER}@127.0.0.1:{port}/{DATABASE}"),
            child: None,
            dir,
            bin,
            user: rustix::process::geteuid().is_root().then(unprivileged_user),
        };
        std::fs::set_permissions(&server.dir, std::fs::Permissions::from_mode(0o700))
            .expect("chmod 0700 the temp dir");
        if let Some((name, uid, gid)) = &server.user {
            std::os::unix::fs::chown(&server.dir, Some(*uid), Some(*gid))
                .unwrap_or_else(|e| panic!("chown the temp dir to {name}: {e}"));
        }
        server.initdb();
        server.spawn();
        server.psql_on("postgres", &format!("create database {DATABASE}"));
        server
    }

    /// `postgres://postgres@127.0.0.1:PORT/ocpp`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Runs `sql` with `psql` (from the server's bin directory, if there) on the database
    /// `ocpp` and returns its output, unaligned and without headers, trimmed (`select 1` gives
    /// `"1"`). Panics, with psql's message, if it fails or takes longer than the bounded wait.
    pub fn psql(&self, sql: &str) -> String {
        self.psql_on(DATABASE, sql)
    }

    /// Simulates a crash: SIGKILL to the postmaster; then waits (bounded) until its children,
    /// orphaned, have exited, as they do by themselves on the postmaster's death (any still
    /// there after the wait get SIGKILL too). Does nothing if the server is not running.
    pub fn kill(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if child.try_wait().ok().flatten().is_none() {
            let pid = Pid::from_child(&child);
            // Stopped first, the postmaster forks no child between the listing and the kill.
            let _ = kill_process(pid, Signal::STOP);
            let deadline = Instant::now() + EXIT_WAIT;
            while !matches!(proc_stat(pid.as_raw_pid()), None | Some(('T' | 'Z', _, _))) {
                if Instant::now() > deadline {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            let children = children_of(pid.as_raw_pid());
            let _ = child.kill();
            let _ = child.wait();
            wait_gone(&children);
        } else {
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same data directory and port, and waits (bounded) until
    /// it accepts connections: after [`kill`](Self::kill) it first recovers from the WAL. If it
    /// is running, it is stopped first (immediate shutdown, as on drop).
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    /// Immediate shutdown (`pg_ctl stop -m immediate`: SIGQUIT to the postmaster's PID, which
    /// stops its children before it exits), bounded; [`kill`](Self::kill) if it lingers.
    fn stop(&mut self) {
        let Some(child) = self.child.as_mut() else {
            return;
        };
        if child.try_wait().ok().flatten().is_none() {
            let _ = kill_process(Pid::from_child(child), Signal::QUIT);
            let deadline = Instant::now() + EXIT_WAIT;
            while child.try_wait().ok().flatten().is_none() {
                if Instant::now() > deadline {
                    self.kill();
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        self.child = None;
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn log(&self) -> PathBuf {
        self.dir.join("postgres.log")
    }

    /// A command for a server program, run as the unprivileged user when we are root.
    fn server_command(&self, program: &str) -> Command {
        let mut command = Command::new(self.bin.join(program));
        command.current_dir(&self.dir).env_remove("PGDATA");
        if let Some((_, uid, gid)) = &self.user {
            command.uid(*uid).gid(*gid);
        }
        command
    }

    fn initdb(&self) {
        let mut command = self.server_command("initdb");
        command.arg("-D").arg(self.data()).args([
            "-U",
            SUPERUSER,
            "--auth=trust",
            "--locale=C",
            "-E",
            "UTF8",
        ]);
        let out = run(command, INITDB_WAIT, "initdb")
            .unwrap_or_else(|e| panic!("start {}: {e}", self.bin.join("initdb").display()));
        assert!(
            out.status.success(),
            "initdb {} failed ({}{}): {}{}",
            self.data().display(),
            out.status,
            self.user
                .as_ref()
                .map(|(name, ..)| format!(", as {name}: the temp dir must be reachable by it"))
                .unwrap_or_default(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let quoted = |path: &Path| path.display().to_string().replace('\'', "''");
        let conf = format!(
            "\n# PostgresServer (tests)\nlisten_addresses = '127.0.0.1'\nport = {}\n\
             unix_socket_directories = '{}'\nfsync = on\nsynchronous_commit = on\n",
            self.port,
            quoted(&self.dir)
        );
        let append = |file: &str, text: &str| {
            use std::io::Write;
            std::fs::OpenOptions::new()
                .append(true)
                .open(self.data().join(file))
                .and_then(|mut f| f.write_all(text.as_bytes()))
                .unwrap_or_else(|e| panic!("write {file}: {e}"));
        };
        append("postgresql.conf", &conf);
        // Trust on 127.0.0.1 only: the file is replaced (truncated; its owner stays).
        std::fs::write(
            self.data().join("pg_hba.conf"),
            "# PostgresServer (tests): trust on 127.0.0.1 only\n\
             host all all 127.0.0.1/32 trust\n",
        )
        .expect("write pg_hba.conf");
    }

    /// Starts the postmaster on the data directory and waits (bounded) until it accepts
    /// connections; panics with the log's last lines if it exits or does not get ready.
    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log())
            .expect("open postgres.log");
        let log_start = log.metadata().map(|m| m.len()).unwrap_or(0);
        let child = self
            .server_command("postgres")
            .arg("-D")
            .arg(self.data())
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("postgres.log"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", self.bin.join("postgres").display()));
        self.child = Some(child);
        let start = Instant::now();
        loop {
            let child = self.child.as_mut().expect("child");
            if let Some(status) = child.try_wait().expect("wait for postgres") {
                self.child = None;
                panic!(
                    "postgres exited ({status}) before accepting connections on port {}; \
                     postgres.log:\n{}",
                    self.port,
                    self.log_since(log_start)
                );
            }
            if self.ready() {
                return;
            }
            if start.elapsed() > WAIT {
                panic!(
                    "postgres does not accept connections on 127.0.0.1:{} after {WAIT:?}; \
                     postgres.log:\n{}",
                    self.port,
                    self.log_since(log_start)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A client program (`psql`, `pg_isready`): in the bin directory, else beside the real
    /// `initdb` (the bin directory may hold symlinks to the server programs only), else on the
    /// PATH.
    fn client(&self, program: &str) -> Option<PathBuf> {
        let real = self.bin.join("initdb").canonicalize().ok();
        let beside = real
            .as_deref()
            .and_then(Path::parent)
            .map(|d| d.join(program));
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::iter::once(self.bin.join(program))
            .chain(beside)
            .chain(std::env::split_paths(&path).map(|dir| dir.join(program)))
            .find(|candidate| candidate.is_file())
    }

    fn psql_path(&self) -> PathBuf {
        self.client("psql").unwrap_or_else(|| {
            panic!(
                "psql not found (in {}, beside initdb, on the PATH): {INSTALL}",
                self.bin.display()
            )
        })
    }

    /// `pg_isready` if there is one, else a `psql` `select 1`.
    fn ready(&self) -> bool {
        let port = self.port.to_string();
        let address = ["-h", "127.0.0.1", "-p", &port, "-U", SUPERUSER];
        let mut command = match self.client("pg_isready") {
            Some(pg_isready) => {
                let mut command = Command::new(pg_isready);
                command.args(address).args(["-q", "-t", "2"]);
                command
            }
            None => {
                let mut command = Command::new(self.psql_path());
                command
                    .args(address)
                    .args(["-X", "-q", "-d", "postgres", "-c", "select 1"]);
                command
            }
        };
        command.env("PGCONNECT_TIMEOUT", "2");
        let program = command.get_program().to_owned();
        run(command, WAIT, "pg_isready")
            .unwrap_or_else(|e| panic!("start {}: {e}", Path::new(&program).display()))
            .status
            .success()
    }

    fn psql_on(&self, database: &str, sql: &str) -> String {
        let psql = self.psql_path();
        let mut command = Command::new(&psql);
        command
            .arg(format!(
                "postgres://{SUPERUSER}@127.0.0.1:{}/{database}",
                self.port
            ))
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .env("PGCONNECT_TIMEOUT", "10");
        let out =
            run(command, WAIT, "psql").unwrap_or_else(|e| panic!("start {}: {e}", psql.display()));
        assert!(
            out.status.success(),
            "psql on {database} ({}): {sql}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// The server log from `offset` on (its last 4 KiB).
    fn log_since(&self, offset: u64) -> String {
        let mut text = String::new();
        if let Ok(mut file) = std::fs::File::open(self.log()) {
            let len = file.metadata().map(|m| m.len()).unwrap_or(0);
            let _ = file.seek(SeekFrom::Start(offset.max(len.saturating_sub(4096))));
            let _ = file.read_to_string(&mut text);
        }
        text
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The directory of initdb and postgres: `PG_BIN`, `pg_config --bindir`, the highest
/// `/usr/lib/postgresql/*/bin`, `initdb` on the PATH; panics, saying how to install it.
fn bin_dir() -> PathBuf {
    let has_server = |dir: &Path| dir.join("initdb").is_file() && dir.join("postgres").is_file();
    if let Some(dir) = std::env::var_os("PG_BIN") {
        let dir = PathBuf::from(dir);
        assert!(
            has_server(&dir),
            "PG_BIN={} has no initdb and postgres: {INSTALL}",
            dir.display()
        );
        return dir;
    }
    let pg_config = run(Command::new("pg_config").arg("--bindir"), WAIT, "pg_config").ok();
    if let Some(out) = pg_config.filter(|out| out.status.success()) {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if has_server(&dir) {
            return dir;
        }
    }
    let version = |dir: &Path| -> Vec<u32> {
        let name = dir.file_name().unwrap_or_default().to_string_lossy();
        name.split('.').map(|n| n.parse().unwrap_or(0)).collect()
    };
    let highest = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|dir| has_server(&dir.join("bin")))
        .max_by_key(|dir| version(dir));
    if let Some(dir) = highest {
        return dir.join("bin");
    }
    let on_path = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|dir| dir.join("initdb"))
        .find(|initdb| initdb.is_file());
    if let Some(initdb) = on_path {
        // A symlink (e.g. /usr/local/bin/initdb) to the real bin directory, with psql beside.
        let real = initdb.canonicalize().unwrap_or(initdb);
        let dir = real.parent().expect("initdb's directory").to_path_buf();
        if has_server(&dir) {
            return dir;
        }
    }
    panic!(
        "PostgreSQL not found (no PG_BIN, no pg_config, no /usr/lib/postgresql/*/bin, no \
         initdb on the PATH): {INSTALL}"
    );
}

/// The user to run the server as when we are root: `postgres` if /etc/passwd has it, else
/// `nobody`; (name, uid, gid).
fn unprivileged_user() -> (String, u32, u32) {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let find = |wanted: &str| {
        passwd.lines().find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            match fields[..] {
                [name, _, uid, gid, ..] if name == wanted => {
                    Some((name.to_owned(), uid.parse().ok()?, gid.parse().ok()?))
                }
                _ => None,
            }
        })
    };
    find("postgres").or_else(|| find("nobody")).expect(
        "running as root, PostgreSQL needs an unprivileged user: neither postgres nor nobody \
         is in /etc/passwd (useradd --system postgres)",
    )
}

/// What a bounded command printed.
struct Output {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// Runs `command` (no stdin, output captured); kills it and panics, naming `what`, if it runs
/// longer than `limit`. `Err` if it cannot be started.
fn run(
    mut command: impl std::borrow::BorrowMut<Command>,
    limit: Duration,
    what: &str,
) -> std::io::Result<Output> {
    let mut child = command
        .borrow_mut()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Ok(Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

/// (state, parent PID, start time) of a process, from /proc; `None` if it is gone.
fn proc_stat(pid: i32) -> Option<(char, i32, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `PID (COMM) STATE PPID ...`: COMM may hold spaces and parentheses.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    Some((
        state,
        fields.get(1)?.parse().ok()?,
        fields.get(19)?.parse().ok()?,
    ))
}

/// The children of `parent` (PID and start time, against PID reuse), from /proc.
fn children_of(parent: i32) -> Vec<(i32, u64)> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let (_, ppid, start) = proc_stat(pid)?;
            (ppid == parent).then_some((pid, start))
        })
        .collect()
}

/// Waits (bounded) until these processes have exited (a zombie has); SIGKILL to any left.
fn wait_gone(processes: &[(i32, u64)]) {
    let alive = |&&(pid, start): &&(i32, u64)| match proc_stat(pid) {
        Some((state, _, started)) => state != 'Z' && started == start,
        None => false,
    };
    let deadline = Instant::now() + EXIT_WAIT;
    while processes.iter().any(|p| alive(&p)) {
        if Instant::now() > deadline {
            for &(pid, _) in processes.iter().filter(alive) {
                if let Some(pid) = Pid::from_raw(pid) {
                    let _ = kill_process(pid, Signal::KILL);
                }
            }
            std::thread::sleep(Duration::from_millis(100));
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
