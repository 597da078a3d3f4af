//! INFO against redis-server 7.0: which sections each selector prints, the
//! field names of the sections zwindow reproduces whole, and the counters
//! of commandstats and errorstats after the same good, rejected and failed
//! commands on both servers.
mod common;

use std::collections::BTreeMap;

use common::*;

/// `section -> [(field, value)]` of an INFO reply (bulk or verbatim).
fn sections(reply: &[u8]) -> BTreeMap<String, Vec<(String, String)>> {
    let text = String::from_utf8_lossy(reply);
    let mut out: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut current = String::new();
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if let Some(name) = line.strip_prefix("# ") {
            current = name.to_lowercase();
            out.entry(current.clone()).or_default();
        } else if let Some((k, v)) = line.split_once(':')
            && !current.is_empty()
        {
            out.entry(current.clone())
                .or_default()
                .push((k.to_string(), v.to_string()));
        }
    }
    out
}

fn info(conn: &mut RawConn, args: &str) -> BTreeMap<String, Vec<(String, String)>> {
    sections(&conn.cmd_str(&format!("INFO {args}")))
}

/// zwindow's own section, on top of Redis's.
const ZWINDOW_ONLY: &[&str] = &["windows"];

#[test]
fn selectors_print_redis_sections() {
    let s = Servers::start();
    let (mut r, mut z) = (s.r.conn(), s.z.conn());
    for args in [
        "",
        "default",
        "all",
        "everything",
        "cpu",
        "cpu memory",
        "cpu all",
        "commandSTATS",
        "sentinel",
        "nosuchsection",
    ] {
        let rs: Vec<String> = info(&mut r, args).into_keys().collect();
        let zs: Vec<String> = info(&mut z, args)
            .into_keys()
            .filter(|k| !ZWINDOW_ONLY.contains(&k.as_str()))
            .collect();
        // zwindow does not produce latencystats yet (see README).
        let rs: Vec<String> = rs.into_iter().filter(|k| k != "latencystats").collect();
        assert_eq!(rs, zs, "INFO {args}");
    }
}

#[test]
fn whole_sections_have_redis_fields() {
    let s = Servers::start();
    let (mut r, mut z) = (s.r.conn(), s.z.conn());
    let (ri, zi) = (info(&mut r, "everything"), info(&mut z, "everything"));
    for section in ["persistence", "replication", "cpu", "modules", "cluster"] {
        let names = |m: &BTreeMap<String, Vec<(String, String)>>| -> Vec<String> {
            m.get(section)
                .map(|f| f.iter().map(|(k, _)| k.clone()).collect())
                .unwrap_or_default()
        };
        assert_eq!(names(&ri), names(&zi), "fields of # {section}");
    }
    let cluster = &zi["cluster"];
    assert_eq!(
        cluster,
        &vec![("cluster_enabled".to_string(), "0".to_string())]
    );
    assert_eq!(
        zi["replication"][0],
        ("role".to_string(), "master".to_string())
    );
    // CPU time grows with work.
    let before: f64 = zi["cpu"][1].1.parse().unwrap();
    z.cmd_str("EVAL \"local x = 0 for i = 1, 2e7 do x = x + i end\" 0");
    let after: f64 = info(&mut z, "cpu")["cpu"][1].1.parse().unwrap();
    assert!(after > before, "used_cpu_user {before} -> {after}");
}

/// The same sequence on both servers leaves the same commandstats counters
/// (calls, rejected_calls, failed_calls; not the timings) and errorstats.
#[test]
fn commandstats_and_errorstats_count_as_redis() {
    let s = Servers::start();
    let mut p = s.pair();
    p.both_str("CONFIG RESETSTAT");
    for line in [
        "SET a 1",
        "GET a",
        "GET",             // arity: rejected
        "CONFIG GET",      // subcommand arity: rejected
        "NOSUCHCOMMAND x", // unknown: an error, no cmdstat
        "LPUSH a x",       // WRONGTYPE: failed
        "INCR a",
        "SET s notanumber",
        "INCR s", // ERR not an integer: failed
        "MULTI",
        "GET a",
        "EXEC",
        "EXEC", // ERR EXEC without MULTI: rejected
    ] {
        p.both_str(line);
    }
    let stats =
        |m: BTreeMap<String, Vec<(String, String)>>, section: &str| -> Vec<(String, String)> {
            m.get(section)
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter(|(k, _)| !k.starts_with("cmdstat_config|resetstat") && k != "cmdstat_info")
                .map(|(k, v)| {
                    // Drop the timings: usec and usec_per_call differ by nature.
                    let kept: Vec<&str> = v.split(',').filter(|f| !f.starts_with("usec")).collect();
                    (k, kept.join(","))
                })
                // Redis lists commands in its command dict's order.
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect()
        };
    let ri = info(&mut p.r, "commandstats");
    let zi = info(&mut p.z, "commandstats");
    assert_eq!(stats(ri, "commandstats"), stats(zi, "commandstats"));
    let ri = info(&mut p.r, "errorstats");
    let zi = info(&mut p.z, "errorstats");
    assert_eq!(stats(ri, "errorstats"), stats(zi, "errorstats"));
    let total = |m: BTreeMap<String, Vec<(String, String)>>| {
        m["stats"]
            .iter()
            .find(|(k, _)| k == "total_error_replies")
            .cloned()
    };
    assert_eq!(
        total(info(&mut p.r, "stats")),
        total(info(&mut p.z, "stats"))
    );
}
