//! The PostgreSQL test helper itself (`common/postgres_server.rs`): a real server on loopback
//! keeps a committed row across a crash of its postmaster (SIGKILL) and a restart on the same
//! data directory and port.

mod common;

use common::postgres_server::PostgresServer;

#[test]
fn a_committed_row_survives_a_crash_and_a_restart() {
    let mut server = PostgresServer::start();
    let url = server.url().to_owned();
    assert!(
        url.starts_with("postgres://") && url.ends_with(&format!(":{}/ocpp", server.port)),
        "{url}"
    );
    server.psql("create table t(x int); insert into t values (1);");
    assert_eq!(server.psql("select x from t"), "1");

    server.kill();
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", server.port)).is_err(),
        "the killed server still accepts connections"
    );

    server.restart();
    assert_eq!(server.url(), url, "same port after the restart");
    assert_eq!(server.psql("select x from t"), "1");
}
