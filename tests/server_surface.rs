//! Differential tests of the server surface a standalone master answers:
//! WAIT, ROLE and LOLWUT, byte for byte against redis-server in RESP2 and
//! RESP3.

mod common;

use common::Servers;

const CASES: &[&str] = &[
    "WAIT 0 0",
    "WAIT 0 10",
    "WAIT",
    "WAIT 0",
    "WAIT a 0",
    "WAIT 0 a",
    "WAIT 0 -1",
    "ROLE",
    "ROLE x",
    "LOLWUT",
    "LOLWUT VERSION 7",
    "LOLWUT VERSION 1 2 3",
    "LOLWUT VERSION x",
    "LOLWUT foo",
    "LOLWUT VERSION",
];

#[test]
fn wait_role_lolwut_match_redis() {
    let s = Servers::start();
    for proto in ["2", "3"] {
        s.pair_resp(proto).script(CASES);
    }
}
