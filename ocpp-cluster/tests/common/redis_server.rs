//! A `redis-server` of a test's own: a free loopback port, a temporary directory, no
//! persistence; killed by its PID when dropped (also on panic). Std only, so that the tests of
//! `ocpp-cluster` (its feature `tokio` included) and the example servers share this one file
//! (`#[path]`). Needs `redis-server` on the PATH (`apt-get install -y redis-server`).
#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the server may take to answer its first PING, and a claim to show.
const WAIT: Duration = Duration::from_secs(10);

/// A redis-server child process, killed (by its PID) when dropped, also on panic.
pub struct RedisServer {
    child: Option<Child>,
    pub port: u16,
    dir: PathBuf,
}

/// The value of `field` in the text of `INFO <section>` (`name:value`), or of one part of its
/// line (`name:a=1,b=2`: with `part` = `b`, the value of `b`); "0" when absent.
pub fn info_field<'a>(text: &'a str, field: &str, part: Option<&str>) -> &'a str {
    let value = text
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{field}:")))
        .unwrap_or("0");
    match part {
        None => value.trim(),
        Some(part) => value
            .split(',')
            .find_map(|kv| kv.strip_prefix(&format!("{part}=")))
            .unwrap_or("0")
            .trim(),
    }
}

/// A loopback port free at the time of asking.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local addr").port()
}

/// How many ports [`RedisServer::start`] tries: a port free when asked may be taken before
/// the server binds it (another test's outgoing connection gets it as its own port), and the
/// server then exits at once.
const PORT_TRIES: usize = 5;

impl RedisServer {
    pub fn start() -> Self {
        for _ in 1..PORT_TRIES {
            if let Some(server) = Self::try_start_on(free_port()) {
                return server;
            }
        }
        Self::start_on(free_port())
    }

    /// Starts a server on `port` as a Redis the cluster (prefix `ocpp`) has used for long:
    /// `ocpp:since` is 0, so a missing claim means connected nowhere at once. An empty Redis
    /// (as after [`restart`](Self::restart)) reads a missing claim as unknown for a claim TTL,
    /// until the holders had the time to register again (PROTOCOL.md, 2 and 4.4).
    pub fn start_on(port: u16) -> Self {
        Self::try_start_on(port)
            .unwrap_or_else(|| panic!("redis-server exited at once (port {port} taken?)"))
    }

    /// [`start_on`](Self::start_on); `None` if the server exits before it answers (its port
    /// was taken).
    fn try_start_on(port: u16) -> Option<Self> {
        let dir = std::env::temp_dir().join(format!("ocpp-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let mut server = RedisServer {
            child: None,
            port,
            dir,
        };
        if !server.try_spawn() {
            return None;
        }
        assert_eq!(server.query("SET ocpp:since 0").as_deref(), Some("+OK"));
        Some(server)
    }

    /// Starts a server as a new cluster finds it: empty, no `ocpp:since` (the nodes set it).
    pub fn start_empty() -> Self {
        let server = Self::start();
        assert_eq!(server.query("DEL ocpp:since").as_deref(), Some(":1"));
        server
    }

    fn spawn(&mut self) {
        assert!(
            self.try_spawn(),
            "redis-server exited at once (port {} taken?)",
            self.port
        );
    }

    /// Starts the server on its port and waits for its PING; `false` if it exited first.
    fn try_spawn(&mut self) -> bool {
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--daemonize", "no", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server must be installed (apt-get install -y redis-server)");
        self.child = Some(child);
        let start = Instant::now();
        while self.query("PING").as_deref() != Some("+PONG") {
            let exited = self
                .child
                .as_mut()
                .is_some_and(|child| child.try_wait().ok().flatten().is_some());
            if exited {
                self.child = None;
                return false;
            }
            assert!(start.elapsed() < WAIT, "redis-server did not answer PING");
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// One inline command; the first reply line, or the bulk string's value (`None` when the
    /// server does not answer).
    pub fn query(&self, command: &str) -> Option<String> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(1))).ok()?;
        stream.write_all(format!("{command}\r\n").as_bytes()).ok()?;
        let mut reader = BufReader::new(stream);
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end().to_owned();
        if line.starts_with('$') && line != "$-1" {
            let mut value = String::new();
            reader.read_line(&mut value).ok()?;
            return Some(value.trim_end().to_owned());
        }
        Some(line)
    }

    /// Waits (blocking, bounded) until `node` reads its inbox (prefix `ocpp`): a command
    /// routed to a node before then finds no reader, and its caller is told it was not sent
    /// (`OwnerUnreachable`), so a test that expects delivery waits for this first.
    pub fn wait_inbox(&self, node: &str) {
        let deadline = Instant::now() + WAIT;
        loop {
            let channels = self.query(&format!("PUBSUB CHANNELS ocpp:inbox:{node}"));
            if channels.as_deref() == Some("*1") {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "node {node} does not read its inbox: {channels:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits (blocking, bounded) until Redis says `node` holds `identity` (prefix `ocpp`).
    pub fn wait_claimed(&self, identity: &str, node: &str) {
        let deadline = Instant::now() + WAIT;
        loop {
            let holder = self.query(&format!("HGET ocpp:cp:{identity} node"));
            if holder.as_deref() == Some(node) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{identity} not claimed by {node}: {holder:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the server (its data is gone: `--save ''`).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port, empty.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
