//! A Redis Cluster of a test's own, on loopback: three masters (`redis-server
//! --cluster-enabled yes`, no replicas) joined with `redis-cli --cluster create`, ready once
//! every master says `cluster_state:ok`. Every process is killed by its PID when the cluster is
//! dropped (also on panic). Std only (`#[path]`-shareable). Needs `redis-server` and
//! `redis-cli` on the PATH (Debian's `redis-server` package has both; `redis-tools`).
#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::sentinel_set::{query, Reply};

/// How long the cluster may take to form (`cluster_state:ok` on every master).
const FORM: Duration = Duration::from_secs(30);
/// How many masters.
pub const MASTERS: usize = 3;

/// Three cluster masters on loopback.
pub struct RedisCluster {
    children: Vec<Child>,
    pub ports: Vec<u16>,
    dir: PathBuf,
}

impl RedisCluster {
    /// Starts three masters, joins them and waits (bounded) until the cluster is ok. Retries
    /// with other ports if one was taken before its server bound it.
    pub fn start() -> Self {
        for attempt in 0..3 {
            let ports: Vec<u16> = (0..MASTERS).map(|_| free_port()).collect();
            match Self::try_start(&ports, 0) {
                Ok(cluster) => return cluster,
                Err(why) if attempt < 2 => eprintln!("redis cluster: {why}; again"),
                Err(why) => panic!("redis cluster did not form: {why}"),
            }
        }
        unreachable!()
    }

    /// Three ports (each with its bus port + 10000) free at the time of asking, and the URL a
    /// cluster on them would have: for a node started before its cluster.
    pub fn reserve() -> (Vec<u16>, String) {
        let ports: Vec<u16> = (0..MASTERS).map(|_| free_port()).collect();
        let url = url_of(&ports);
        (ports, url)
    }

    /// Starts the cluster on `ports` ([`RedisCluster::reserve`]).
    pub fn start_on(ports: &[u16]) -> Self {
        Self::try_start(ports, 0).unwrap_or_else(|why| panic!("redis cluster did not form: {why}"))
    }

    /// Three masters with a replica each (six servers): for a failover.
    pub fn start_with_replicas() -> Self {
        let ports: Vec<u16> = (0..2 * MASTERS).map(|_| free_port()).collect();
        let mut cluster = Self::try_start(&ports, 1)
            .unwrap_or_else(|why| panic!("redis cluster did not form: {why}"));
        // A replica that never synced refuses to take over: wait until each one has.
        let replicas = cluster.ports.clone();
        cluster
            .wait(|| {
                let synced = replicas
                    .iter()
                    .filter(|&&port| {
                        query(port, &["INFO", "replication"])
                            .and_then(|r| r.text().map(|t| t.contains("master_link_status:up")))
                            .unwrap_or(false)
                    })
                    .count();
                synced == MASTERS
            })
            .unwrap_or_else(|why| panic!("the replicas did not sync: {why}"));
        cluster
    }

    fn try_start(ports: &[u16], replicas: usize) -> Result<Self, String> {
        let ports = ports.to_vec();
        let dir = std::env::temp_dir().join(format!(
            "ocpp-redis-cluster-{}-{}",
            std::process::id(),
            ports[0]
        ));
        std::fs::create_dir_all(&dir).map_err(|e| format!("temp dir: {e}"))?;
        let mut cluster = RedisCluster {
            children: Vec::new(),
            ports: ports.clone(),
            dir,
        };
        for &port in &ports {
            let child = cluster.spawn(port);
            cluster.children.push(child);
        }
        for &port in &ports {
            cluster.wait(|| query(port, &["PING"]) == Some(Reply::Status("PONG".into())))?;
        }
        let addresses: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
        let created = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addresses)
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .expect("redis-cli must be installed (apt-get install -y redis-tools)");
        if !created.status.success() {
            return Err(format!(
                "redis-cli --cluster create: {}",
                String::from_utf8_lossy(&created.stderr)
            ));
        }
        for &port in &ports {
            cluster.wait(|| {
                query(port, &["CLUSTER", "INFO"])
                    .and_then(|r| r.text().map(|t| t.contains("cluster_state:ok")))
                    .unwrap_or(false)
            })?;
        }
        // As a Redis the cluster (prefix `ocpp`) has used for long (RedisServer::start).
        let since = "{ocpp}:since";
        cluster.wait(|| {
            RedisCluster::query_slot(&ports, since, &["SET", since, "0"])
                == Some(Reply::Status("OK".into()))
        })?;
        Ok(cluster)
    }

    /// One cluster master on `port`, its node file in the cluster's directory (kept across a
    /// [`restart`](Self::restart), so it comes back as the same node, without its data).
    fn spawn(&self, port: u16) -> Child {
        Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--daemonize", "no", "--save", "", "--appendonly", "no"])
            .args(["--cluster-enabled", "yes", "--cluster-node-timeout", "2000"])
            // A replica syncs at once (not after the default 5 s wait for more replicas).
            .args(["--repl-diskless-sync-delay", "0"])
            .arg("--cluster-config-file")
            .arg(self.dir.join(format!("nodes-{port}.conf")))
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server must be installed (apt-get install -y redis-server)")
    }

    /// Kills the master on `port` (SIGKILL: its data is gone, `--save ''`), starts it again as
    /// the same cluster node (its node file) and waits until the cluster is ok again.
    pub fn restart(&mut self, port: u16) {
        let i = self
            .ports
            .iter()
            .position(|p| *p == port)
            .expect("a port of the cluster");
        let _ = self.children[i].kill();
        let _ = self.children[i].wait();
        self.children[i] = self.spawn(port);
        let ports = self.ports.clone();
        self.wait(|| {
            ports.iter().all(|&port| {
                query(port, &["CLUSTER", "INFO"])
                    .and_then(|r| r.text().map(|t| t.contains("cluster_state:ok")))
                    .unwrap_or(false)
            })
        })
        .expect("the cluster is ok again");
    }

    /// Kills the master on `port` (SIGKILL) and waits (bounded) until another server serves
    /// its slots (its replica, promoted) and the servers left say the cluster is ok.
    pub fn kill(&mut self, port: u16) {
        let i = self
            .ports
            .iter()
            .position(|p| *p == port)
            .expect("a port of the cluster");
        // The slots it served: one of each range (`myself` line) is enough to follow them.
        let served: Vec<u16> = (0..16384u16)
            .step_by(64)
            .filter(|&slot| self.server_of(slot) == Some(port))
            .collect();
        let mut killed = self.children.remove(i);
        let _ = killed.kill();
        let _ = killed.wait();
        self.ports.remove(i);
        let left = self.ports.clone();
        let start = Instant::now();
        while !served.iter().all(|&slot| self.server_of(slot).is_some()) {
            assert!(
                start.elapsed() < FORM,
                "no replica took the slots of {port} over"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        self.wait(|| {
            left.iter().all(|&port| {
                query(port, &["CLUSTER", "INFO"])
                    .and_then(|r| r.text().map(|t| t.contains("cluster_state:ok")))
                    .unwrap_or(false)
            })
        })
        .expect("the cluster is ok again");
    }

    fn wait(&mut self, mut ready: impl FnMut() -> bool) -> Result<(), String> {
        let start = Instant::now();
        while !ready() {
            for child in &mut self.children {
                if child.try_wait().ok().flatten().is_some() {
                    return Err("a redis-server exited (port taken?)".into());
                }
            }
            if start.elapsed() > FORM {
                return Err(format!("not ready within {FORM:?}"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    /// `redis-cluster://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3`.
    pub fn url(&self) -> String {
        url_of(&self.ports)
    }

    /// The slot of `key` (`CLUSTER KEYSLOT`).
    pub fn keyslot(&self, key: &str) -> u16 {
        match query(self.ports[0], &["CLUSTER", "KEYSLOT", key]) {
            Some(Reply::Int(slot)) => slot as u16,
            other => panic!("CLUSTER KEYSLOT {key}: {other:?}"),
        }
    }

    /// One command on the master that serves `key`, found by asking each until one does not
    /// redirect (`MOVED`).
    fn query_slot(ports: &[u16], key: &str, words: &[&str]) -> Option<Reply> {
        let _ = key;
        ports.iter().find_map(|&port| match query(port, words) {
            Some(Reply::Error(e)) if e.starts_with("MOVED") => None,
            other => other,
        })
    }

    /// The port of the master that serves `key`'s slot (each master's `CLUSTER NODES`
    /// `myself` line names its slots).
    pub fn master_of(&self, key: &str) -> u16 {
        let slot = self.keyslot(key);
        self.server_of(slot)
            .unwrap_or_else(|| panic!("no master serves slot {slot}"))
    }

    /// The port of the server whose `myself` line serves `slot`, if any.
    fn server_of(&self, slot: u16) -> Option<u16> {
        self.ports.iter().copied().find(|&port| {
            let nodes = query(port, &["CLUSTER", "NODES"]);
            let Some(text) = nodes.as_ref().and_then(Reply::text) else {
                return false;
            };
            let mine = text.lines().find(|l| l.contains("myself"));
            mine.is_some_and(|line| {
                line.split(' ').skip(8).any(|range| {
                    let mut bounds = range.split('-').map(|b| b.parse::<u16>().ok());
                    match (bounds.next().flatten(), bounds.next()) {
                        (Some(lo), None) => lo == slot,
                        (Some(lo), Some(Some(hi))) => (lo..=hi).contains(&slot),
                        _ => false,
                    }
                })
            })
        })
    }

    /// Moves `key`'s slot, with its keys, to the master on `to` (a resharding of one slot:
    /// `CLUSTER SETSLOT` IMPORTING and MIGRATING, `MIGRATE` of its keys, then `SETSLOT NODE`
    /// on every master). Bounded.
    pub fn move_slot(&self, key: &str, to: u16) {
        let slot = self.keyslot(key).to_string();
        let from = self.master_of(key);
        assert_ne!(from, to, "the slot is on {to} already");
        let id = |port: u16| match query(port, &["CLUSTER", "MYID"]) {
            Some(reply) => reply.text().expect("an id").to_owned(),
            None => panic!("CLUSTER MYID on {port}"),
        };
        let (from_id, to_id) = (id(from), id(to));
        let ok = |port: u16, words: &[&str]| {
            let reply = query(port, words);
            assert_eq!(
                reply,
                Some(Reply::Status("OK".into())),
                "{words:?} on {port}"
            );
        };
        ok(to, &["CLUSTER", "SETSLOT", &slot, "IMPORTING", &from_id]);
        ok(from, &["CLUSTER", "SETSLOT", &slot, "MIGRATING", &to_id]);
        let to_port = to.to_string();
        for _ in 0..1000 {
            let keys = match query(from, &["CLUSTER", "GETKEYSINSLOT", &slot, "100"]) {
                Some(Reply::Array(keys)) => keys,
                other => panic!("GETKEYSINSLOT: {other:?}"),
            };
            if keys.is_empty() {
                break;
            }
            let mut words = vec!["MIGRATE", "127.0.0.1", &to_port, "", "0", "5000", "KEYS"];
            let names: Vec<String> = keys
                .iter()
                .filter_map(|k| k.text().map(str::to_owned))
                .collect();
            words.extend(names.iter().map(String::as_str));
            ok(from, &words);
        }
        for &port in &self.ports {
            ok(port, &["CLUSTER", "SETSLOT", &slot, "NODE", &to_id]);
        }
        let start = Instant::now();
        while self.master_of(key) != to {
            assert!(start.elapsed() < FORM, "slot {slot} did not move to {to}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits (blocking, bounded) until every replica of the master on `port` has acknowledged
    /// all that master had written when this was called (`INFO replication`: each replica's
    /// `offset` against the master's `master_repl_offset`; replicas acknowledge every second).
    /// Replication is asynchronous: a fixed sleep is not enough on a loaded machine.
    pub fn wait_replicated(&mut self, port: u16) {
        let info = |port: u16| {
            query(port, &["INFO", "replication"])
                .and_then(|r| r.text().map(str::to_owned))
                .unwrap_or_default()
        };
        let number = |text: &str, key: &str| -> Option<u64> {
            let at = text.find(key)? + key.len();
            let digits: String = text[at..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().ok()
        };
        let target = number(&info(port), "master_repl_offset:").expect("a master's offset");
        self.wait(|| {
            let text = info(port);
            let acked: Vec<u64> = text
                .lines()
                .filter(|line| line.starts_with("slave"))
                .filter_map(|line| number(line, "offset="))
                .collect();
            !acked.is_empty() && acked.iter().all(|&offset| offset >= target)
        })
        .unwrap_or_else(|why| panic!("the replicas of {port} did not catch up: {why}"));
    }

    /// One command to the master that serves `key`.
    pub fn query_key(&self, key: &str, words: &[&str]) -> Option<Reply> {
        query(self.master_of(key), words)
    }

    /// A number of `INFO <section>` summed over the servers (`name:value`, or one part of a
    /// line `name:a=1,b=2`: with `field` = `name` and `part` = `b`, the value of `b`): e.g.
    /// `EVALSHA` calls (`commandstats`, `cmdstat_evalsha`, `calls`), or the reads of client
    /// sockets (`stats`, `total_reads_processed`: about one per round trip of a client, a
    /// pipeline being read in a few large reads).
    pub fn info_sum(&self, section: &str, field: &str, part: Option<&str>) -> u64 {
        self.ports
            .iter()
            .map(|&port| {
                let text = query(port, &["INFO", section])
                    .and_then(|r| r.text().map(str::to_owned))
                    .unwrap_or_else(|| panic!("INFO {section} on {port}"));
                crate::common::info_field(&text, field, part)
                    .parse::<u64>()
                    .expect("a number")
            })
            .sum()
    }

    /// Waits (blocking, bounded) until `node` reads its inbox (prefix `ocpp`, a sharded channel
    /// in the slot of `{ocpp}`).
    pub fn wait_inbox(&self, node: &str) {
        let channel = format!("{{ocpp}}:inbox:{node}");
        let port = self.master_of(&channel);
        let start = Instant::now();
        loop {
            let counts = query(port, &["PUBSUB", "SHARDNUMSUB", &channel]);
            if let Some(Reply::Array(items)) = &counts
                && items.get(1) == Some(&Reply::Int(1))
            {
                return;
            }
            assert!(
                start.elapsed() < FORM,
                "node {node} does not read its inbox: {counts:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits (blocking, bounded) until the cluster says `node` holds `identity`.
    pub fn wait_claimed(&self, identity: &str, node: &str) {
        let key = format!("ocpp:cp:{identity}");
        let start = Instant::now();
        loop {
            let holder = self.query_key(&key, &["HGET", &key, "node"]);
            if holder.as_ref().and_then(Reply::text) == Some(node) {
                return;
            }
            assert!(
                start.elapsed() < FORM,
                "{identity} not claimed by {node}: {holder:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl crate::common::Backend for RedisCluster {
    fn redis_url(&self) -> String {
        self.url()
    }
    fn exists(&self, key: &str) -> bool {
        self.query_key(key, &["EXISTS", key]) == Some(Reply::Int(1))
    }
    fn node_key(&self, node: &str) -> String {
        format!("{{ocpp}}:node:{node}")
    }
}

fn url_of(ports: &[u16]) -> String {
    let nodes: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    format!("redis-cluster://{}", nodes.join(","))
}

fn free_port() -> u16 {
    // A cluster node also listens on its port + 10000 (the cluster bus): both must be free.
    loop {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
        let port = listener.local_addr().expect("local addr").port();
        if port < 55000 && std::net::TcpListener::bind(("127.0.0.1", port + 10000)).is_ok() {
            return port;
        }
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
