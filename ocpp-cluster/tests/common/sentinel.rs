//! A Redis Sentinel set of a test's own, on loopback: a master, a replica (`--replicaof`) and
//! three `redis-server --sentinel` processes watching service `svc` (quorum 2, down after
//! 1 s). Every process is killed by its PID when the set is dropped (also on panic). Std only,
//! so that other crates' tests can share it (`#[path]`). Needs `redis-server` on the PATH.
#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The service the sentinels watch.
pub const SERVICE: &str = "svc";
/// How long the set may take to form (the sentinels to find each other and the replica).
const FORM: Duration = Duration::from_secs(30);

/// A reply of the Redis protocol (RESP2), enough for tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Status(String),
    Error(String),
    Int(i64),
    Bulk(Option<String>),
    Array(Vec<Reply>),
}

impl Reply {
    /// The text of a status or bulk string.
    pub fn text(&self) -> Option<&str> {
        match self {
            Reply::Status(s) | Reply::Bulk(Some(s)) => Some(s),
            _ => None,
        }
    }

    /// The value of `field` in a flat array of field/value pairs (`SENTINEL MASTER`, `HGETALL`).
    pub fn field(&self, field: &str) -> Option<&str> {
        let Reply::Array(items) = self else {
            return None;
        };
        items
            .chunks(2)
            .find(|pair| pair[0].text() == Some(field))
            .and_then(|pair| pair.get(1)?.text())
    }
}

/// One command (its words sent as a RESP array, so values may hold spaces) to the server on
/// `port`; `None` when it does not answer within a second.
pub fn query(port: u16, words: &[&str]) -> Option<Reply> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(1))).ok()?;
    let mut request = format!("*{}\r\n", words.len());
    for word in words {
        request.push_str(&format!("${}\r\n{word}\r\n", word.len()));
    }
    stream.write_all(request.as_bytes()).ok()?;
    read_reply(&mut BufReader::new(stream))
}

fn read_reply(reader: &mut impl BufRead) -> Option<Reply> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let line = line.trim_end_matches("\r\n");
    let (kind, rest) = line.split_at_checked(1)?;
    Some(match kind {
        "+" => Reply::Status(rest.to_owned()),
        "-" => Reply::Error(rest.to_owned()),
        ":" => Reply::Int(rest.parse().ok()?),
        "$" => {
            let len: i64 = rest.parse().ok()?;
            if len < 0 {
                Reply::Bulk(None)
            } else {
                let mut buf = vec![0; len as usize + 2];
                reader.read_exact(&mut buf).ok()?;
                buf.truncate(len as usize);
                Reply::Bulk(Some(String::from_utf8_lossy(&buf).into_owned()))
            }
        }
        "*" => {
            let len: i64 = rest.parse().ok()?;
            let mut items = Vec::new();
            for _ in 0..len.max(0) {
                items.push(read_reply(reader)?);
            }
            Reply::Array(items)
        }
        _ => return None,
    })
}

pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local addr").port()
}

/// One process of the set.
pub struct Process {
    pub port: u16,
    child: Option<Child>,
}

impl Process {
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// SIGKILL, by the PID of the child this set started.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The set: `data[0]` starts as the master, `data[1]` as its replica.
pub struct SentinelSet {
    pub data: Vec<Process>,
    pub sentinels: Vec<Process>,
    dir: PathBuf,
}

impl SentinelSet {
    /// Starts the five processes and waits (bounded) until every sentinel knows the master,
    /// the replica and the two other sentinels. `ocpp:since` is set to 0 on the master, as on
    /// a Redis the cluster has used for long (see `redis_server.rs`).
    pub fn start() -> Self {
        let dir = std::env::temp_dir().join(format!(
            "ocpp-sentinel-{}-{}",
            std::process::id(),
            free_port()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let mut set = SentinelSet {
            data: Vec::new(),
            sentinels: Vec::new(),
            dir,
        };
        let master = free_port();
        set.data.push(set.spawn_data(master, None));
        set.data.push(set.spawn_data(free_port(), Some(master)));
        assert_eq!(
            query(master, &["SET", "ocpp:since", "0"]),
            Some(Reply::Status("OK".into()))
        );
        let replica = set.data[1].port;
        set.wait("the replica to sync", || {
            query(replica, &["INFO", "replication"])
                .and_then(|r| r.text().map(|t| t.contains("master_link_status:up")))
                .unwrap_or(false)
        });
        for _ in 0..3 {
            let sentinel = set.spawn_sentinel(free_port(), master);
            set.sentinels.push(sentinel);
        }
        let ports: Vec<u16> = set.sentinels.iter().map(|s| s.port).collect();
        set.wait("the sentinels to find each other and the replica", || {
            ports.iter().all(|port| {
                query(*port, &["SENTINEL", "MASTER", SERVICE]).is_some_and(|info| {
                    info.field("num-other-sentinels") == Some("2")
                        && info.field("num-slaves") == Some("1")
                })
            })
        });
        set
    }

    fn spawn_data(&self, port: u16, replica_of: Option<u16>) -> Process {
        let mut command = Command::new("redis-server");
        command
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--daemonize", "no", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .args(["--dbfilename", &format!("dump-{port}.rdb")]);
        if let Some(master) = replica_of {
            command.args(["--replicaof", "127.0.0.1", &master.to_string()]);
        }
        self.spawn(command, port)
    }

    fn spawn_sentinel(&self, port: u16, master: u16) -> Process {
        let conf = self.dir.join(format!("sentinel-{port}.conf"));
        let text = format!(
            "port {port}\nbind 127.0.0.1\ndaemonize no\ndir {dir}\n\
             sentinel monitor {SERVICE} 127.0.0.1 {master} 2\n\
             sentinel down-after-milliseconds {SERVICE} 1000\n\
             sentinel failover-timeout {SERVICE} 5000\n\
             sentinel parallel-syncs {SERVICE} 1\n",
            dir = self.dir.display()
        );
        std::fs::write(&conf, text).expect("sentinel config");
        let mut command = Command::new("redis-server");
        command.arg(&conf).arg("--sentinel");
        self.spawn(command, port)
    }

    fn spawn(&self, mut command: Command, port: u16) -> Process {
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server must be installed (apt-get install -y redis-server)");
        let process = Process {
            port,
            child: Some(child),
        };
        let start = Instant::now();
        while query(port, &["PING"]) != Some(Reply::Status("PONG".into())) {
            assert!(
                start.elapsed() < FORM,
                "redis-server on {port} did not answer PING"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        process
    }

    fn wait(&self, what: &str, mut done: impl FnMut() -> bool) {
        let start = Instant::now();
        while !done() {
            assert!(start.elapsed() < FORM, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The URL the nodes use: every sentinel of the set.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .sentinels
            .iter()
            .map(|s| format!("127.0.0.1:{}", s.port))
            .collect();
        format!("redis+sentinel://{}/{SERVICE}", hosts.join(","))
    }

    /// The master's port as the first sentinel that answers names it.
    pub fn named_master(&self) -> Option<u16> {
        self.sentinels.iter().find_map(|s| {
            let reply = query(s.port, &["SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE])?;
            match reply {
                Reply::Array(items) => items.get(1)?.text()?.parse().ok(),
                _ => None,
            }
        })
    }

    /// Whether the data node on `port` says it is a master (`ROLE`).
    pub fn is_master(port: u16) -> bool {
        matches!(query(port, &["ROLE"]), Some(Reply::Array(items))
            if items.first().and_then(Reply::text) == Some("master"))
    }

    /// SIGKILLs the current master; returns its port.
    pub fn kill_master(&mut self) -> u16 {
        let port = self.named_master().expect("a master is named");
        let process = self
            .data
            .iter_mut()
            .find(|p| p.port == port)
            .expect("the named master is one of ours");
        process.kill();
        port
    }

    /// `SENTINEL FAILOVER svc` on the first sentinel: a switch with the old master alive (the
    /// sentinels make it a replica of the new one a few seconds later).
    pub fn failover(&self) {
        let reply = query(self.sentinels[0].port, &["SENTINEL", "FAILOVER", SERVICE]);
        assert_eq!(reply, Some(Reply::Status("OK".into())), "SENTINEL FAILOVER");
    }

    /// Waits (blocking, bounded) until every running sentinel names a master other than `old`
    /// that says it is one; returns its port.
    pub fn wait_new_master(&self, old: u16, limit: Duration) -> u16 {
        let start = Instant::now();
        loop {
            let named: Vec<Option<u16>> = self
                .sentinels
                .iter()
                .filter(|s| s.is_running())
                .map(
                    |s| match query(s.port, &["SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE])? {
                        Reply::Array(items) => items.get(1)?.text()?.parse().ok(),
                        _ => None,
                    },
                )
                .collect();
            if let Some(Some(port)) = named.first()
                && *port != old
                && named.iter().all(|n| *n == Some(*port))
                && Self::is_master(*port)
            {
                return *port;
            }
            assert!(
                start.elapsed() < limit,
                "no new master within {limit:?}: {named:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for SentinelSet {
    fn drop(&mut self) {
        for process in self.sentinels.iter_mut().chain(self.data.iter_mut()) {
            process.kill();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
