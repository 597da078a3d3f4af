//! The `redis` client crate driving zwindow: sync and tokio multiplexed connections,
//! RESP3 via `?protocol=resp3`, a 10,000-command pipeline, and `--requirepass` auth.
mod common;

use common::ZwindowServer;
use redis::{Commands, Value};

#[test]
fn sync_connection_basics() {
    let z = ZwindowServer::start(&[]);
    let client = redis::Client::open(z.url()).unwrap();
    let mut con = client.get_connection().unwrap();
    let pong: String = redis::cmd("PING").query(&mut con).unwrap();
    assert_eq!(pong, "PONG");
    let () = con.set("k", "v").unwrap();
    let v: Option<String> = con.get("k").unwrap();
    assert_eq!(v.as_deref(), Some("v"));
    let missing: Option<String> = con.get("missing").unwrap();
    assert_eq!(missing, None);
    let n: i64 = con.exists("k").unwrap();
    assert_eq!(n, 1);
    let () = redis::cmd("SET")
        .arg("t")
        .arg("v")
        .arg("EX")
        .arg(100)
        .query(&mut con)
        .unwrap();
    let ttl: i64 = con.ttl("t").unwrap();
    assert!((99..=100).contains(&ttl), "ttl {ttl}");
    let deleted: i64 = con.del(&["k", "t", "missing"]).unwrap();
    assert_eq!(deleted, 2);
    let size: i64 = redis::cmd("DBSIZE").query(&mut con).unwrap();
    assert_eq!(size, 0);
    let bin: Vec<u8> = (0..=255u8).collect();
    let () = con.set("bin", &bin[..]).unwrap();
    let back: Vec<u8> = con.get("bin").unwrap();
    assert_eq!(back, bin);
    // Errors come back as errors, and the connection stays usable.
    let err = redis::cmd("NOSUCHCOMMAND")
        .arg("a")
        .query::<Value>(&mut con)
        .unwrap_err();
    assert_eq!(err.code(), Some("ERR"), "{err:?}");
    let pong: String = redis::cmd("PING").query(&mut con).unwrap();
    assert_eq!(pong, "PONG");
}

#[test]
fn tokio_multiplexed_connection() {
    let z = ZwindowServer::start(&[]);
    let url = z.url();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let client = redis::Client::open(url).unwrap();
        let con = client.get_multiplexed_async_connection().await.unwrap();
        // Many concurrent requests over the one multiplexed connection.
        let mut tasks = Vec::new();
        for i in 0..200 {
            let mut con = con.clone();
            tasks.push(tokio::spawn(async move {
                let key = format!("key:{i}");
                let () = redis::cmd("SET")
                    .arg(&key)
                    .arg(i)
                    .query_async(&mut con)
                    .await
                    .unwrap();
                let v: i64 = redis::cmd("GET")
                    .arg(&key)
                    .query_async(&mut con)
                    .await
                    .unwrap();
                assert_eq!(v, i);
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let mut con = con;
        let size: i64 = redis::cmd("DBSIZE").query_async(&mut con).await.unwrap();
        assert_eq!(size, 200);
    });
}

#[test]
fn resp3_via_url() {
    let z = ZwindowServer::start(&[]);
    let client =
        redis::Client::open(format!("redis://127.0.0.1:{}/?protocol=resp3", z.port())).unwrap();
    let mut con = client.get_connection().unwrap();
    // The client sent HELLO 3; a RESP3 server answers HELLO with a map.
    let hello: Value = redis::cmd("HELLO").arg(3).query(&mut con).unwrap();
    let Value::Map(fields) = &hello else {
        panic!("HELLO 3 is not a map: {hello:?}");
    };
    let proto = fields
        .iter()
        .find(|(k, _)| matches!(k, Value::BulkString(b) if b == b"proto"))
        .map(|(_, v)| v.clone());
    assert_eq!(proto, Some(Value::Int(3)), "{hello:?}");
    // RESP3 null for a missing key.
    let v: Value = redis::cmd("GET").arg("missing").query(&mut con).unwrap();
    assert_eq!(v, Value::Nil);
    let () = con.set("k", "v").unwrap();
    let v: String = con.get("k").unwrap();
    assert_eq!(v, "v");
}

#[test]
fn pipeline_of_10000_sets() {
    let z = ZwindowServer::start(&[]);
    let client = redis::Client::open(z.url()).unwrap();
    let mut con = client.get_connection().unwrap();
    let mut pipe = redis::pipe();
    for i in 0..10_000 {
        pipe.set(format!("k{i}"), i).ignore();
    }
    pipe.cmd("DBSIZE");
    let (size,): (i64,) = pipe.query(&mut con).unwrap();
    assert_eq!(size, 10_000);
    let mut pipe = redis::pipe();
    for i in (0..10_000).step_by(997) {
        pipe.get(format!("k{i}"));
    }
    let values: Vec<i64> = pipe.query(&mut con).unwrap();
    assert_eq!(values, (0..10_000).step_by(997).collect::<Vec<i64>>());
}

#[test]
fn requirepass_noauth_then_auth() {
    let z = ZwindowServer::start(&["--requirepass", "s3cret"]);
    let client = redis::Client::open(z.url()).unwrap();
    let mut con = client.get_connection().unwrap();
    let err = redis::cmd("GET")
        .arg("k")
        .query::<Value>(&mut con)
        .unwrap_err();
    assert_eq!(err.code(), Some("NOAUTH"), "{err:?}");
    let err = redis::cmd("AUTH")
        .arg("wrong")
        .query::<Value>(&mut con)
        .unwrap_err();
    assert_eq!(err.code(), Some("WRONGPASS"), "{err:?}");
    let () = redis::cmd("AUTH").arg("s3cret").query(&mut con).unwrap();
    let () = con.set("k", "v").unwrap();
    let v: String = con.get("k").unwrap();
    assert_eq!(v, "v");

    // A client that authenticates through the URL works from the start.
    let client = redis::Client::open(format!("redis://:s3cret@127.0.0.1:{}/", z.port())).unwrap();
    let mut con = client.get_connection().unwrap();
    let v: String = con.get("k").unwrap();
    assert_eq!(v, "v");
    // And a wrong password in the URL fails to connect.
    let client = redis::Client::open(format!("redis://:nope@127.0.0.1:{}/", z.port())).unwrap();
    assert!(client.get_connection().is_err());
}
