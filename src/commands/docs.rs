//! `COMMAND DOCS`: documentation derived from each command's one-line
//! grammar in the table.
//!
//! redis-cli asks `COMMAND DOCS` at start and builds its argument hints from
//! the `arguments` tree. Rather than keeping a second, hand-written tree per
//! command, the table holds the grammar as Redis's docs print it
//! (`key [NX | XX] seconds`) and this module parses it into that tree.

use super::Command;
use crate::protocol::Reply;

/// A node of the argument tree, shaped as `COMMAND DOCS` reports it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Arg {
    pub(crate) name: String,
    pub(crate) kind: &'static str,
    token: Option<String>,
    optional: bool,
    multiple: bool,
    pub(crate) args: Vec<Arg>,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Word(String),
    Group(Vec<Vec<Node>>),
    Ellipsis,
}

/// Parses a grammar line into the argument list.
pub(crate) fn parse_syntax(s: &str) -> Result<Vec<Arg>, String> {
    let spaced = s
        .replace('[', " [ ")
        .replace(']', " ] ")
        .replace('|', " | ");
    let tokens: Vec<&str> = spaced.split_whitespace().collect();
    let mut pos = 0;
    let alts = parse_alts(&tokens, &mut pos)?;
    if pos != tokens.len() {
        return Err(format!("unexpected '{}'", tokens[pos]));
    }
    Ok(if alts.len() == 1 {
        convert_seq(&alts[0])
    } else {
        vec![oneof(&alts, false)]
    })
}

fn parse_alts(t: &[&str], pos: &mut usize) -> Result<Vec<Vec<Node>>, String> {
    let mut alts = vec![Vec::new()];
    while *pos < t.len() {
        match t[*pos] {
            "]" => break,
            "|" => {
                *pos += 1;
                alts.push(Vec::new());
            }
            "[" => {
                *pos += 1;
                let inner = parse_alts(t, pos)?;
                if t.get(*pos) != Some(&"]") {
                    return Err("unclosed '['".into());
                }
                *pos += 1;
                alts.last_mut()
                    .unwrap_or(&mut Vec::new())
                    .push(Node::Group(inner));
            }
            "..." => {
                *pos += 1;
                if let Some(last) = alts.last_mut() {
                    last.push(Node::Ellipsis);
                }
            }
            w => {
                *pos += 1;
                if let Some(last) = alts.last_mut() {
                    last.push(Node::Word(w.to_string()));
                }
            }
        }
    }
    Ok(alts)
}

fn is_token(w: &str) -> bool {
    w.chars().any(|c| c.is_ascii_uppercase()) && !w.chars().any(|c| c.is_ascii_lowercase())
}

fn value_kind(name: &str) -> &'static str {
    match name {
        "key" | "destination" | "source" | "newkey" => "key",
        "pattern" => "pattern",
        "score" | "increment" | "weight" | "min" | "max" | "timeout" => "double",
        "count" | "seconds" | "milliseconds" | "index" | "numkeys" | "start" | "end" | "stop"
        | "offset" | "db" | "index1" | "index2" | "protover" | "cursor" | "numreplicas" | "len" => {
            "integer"
        }
        n if n.starts_with("unix-time") => "unix-time",
        _ => "string",
    }
}

fn word(w: &str) -> Arg {
    if is_token(w) {
        Arg {
            name: w.to_lowercase(),
            kind: "pure-token",
            token: Some(w.to_string()),
            optional: false,
            multiple: false,
            args: vec![],
        }
    } else {
        Arg {
            name: w.to_string(),
            kind: value_kind(w),
            token: None,
            optional: false,
            multiple: false,
            args: vec![],
        }
    }
}

/// One alternative of a group as a single argument.
fn alt_arg(nodes: &[Node]) -> Arg {
    let args = convert_seq(nodes);
    match args.len() {
        1 => args.into_iter().next().unwrap_or_else(|| word("arg")),
        _ => {
            // `TOKEN value` is one argument with a token.
            if args.len() == 2
                && args[0].kind == "pure-token"
                && args[1].kind != "pure-token"
                && args[1].token.is_none()
                && args[1].args.is_empty()
            {
                let mut v = args[1].clone();
                v.token = args[0].token.clone();
                v.multiple |= args[1].multiple;
                return v;
            }
            let name = args
                .iter()
                .map(|a| a.name.as_str())
                .collect::<Vec<_>>()
                .join("-");
            let mut block = Arg {
                name,
                kind: "block",
                token: None,
                optional: false,
                multiple: false,
                args,
            };
            if block.args[0].kind == "pure-token" && block.args.len() > 1 {
                block.token = block.args[0].token.clone();
                block.name = block.args[0].name.clone();
                block.args.remove(0);
            }
            block
        }
    }
}

fn oneof(alts: &[Vec<Node>], optional: bool) -> Arg {
    let args: Vec<Arg> = alts.iter().map(|a| alt_arg(a)).collect();
    let name = args
        .iter()
        .map(|a| a.name.as_str())
        .collect::<Vec<_>>()
        .join("-");
    Arg {
        name,
        kind: "oneof",
        token: None,
        optional,
        multiple: false,
        args,
    }
}

fn convert_seq(nodes: &[Node]) -> Vec<Arg> {
    let mut out: Vec<Arg> = Vec::new();
    for node in nodes {
        match node {
            Node::Word(w) => out.push(word(w)),
            Node::Ellipsis => {
                if let Some(last) = out.last_mut() {
                    last.multiple = true;
                }
            }
            Node::Group(alts) => {
                // `key [key ...]`: a repetition of what precedes it.
                if alts.len() == 1 && alts[0].last() == Some(&Node::Ellipsis) {
                    let rep = convert_seq(&alts[0][..alts[0].len() - 1]);
                    let k = rep.len();
                    if k > 0
                        && out.len() >= k
                        && out[out.len() - k..]
                            .iter()
                            .zip(&rep)
                            .all(|(a, b)| a.name == b.name)
                    {
                        if k == 1 {
                            if let Some(last) = out.last_mut() {
                                last.multiple = true;
                            }
                        } else {
                            let items: Vec<Arg> = out.drain(out.len() - k..).collect();
                            let name = items
                                .iter()
                                .map(|a| a.name.as_str())
                                .collect::<Vec<_>>()
                                .join("-");
                            out.push(Arg {
                                name,
                                kind: "block",
                                token: None,
                                optional: false,
                                multiple: true,
                                args: items,
                            });
                        }
                        continue;
                    }
                    let mut a = alt_arg(&alts[0]);
                    a.optional = true;
                    a.multiple = true;
                    out.push(a);
                    continue;
                }
                let mut a = if alts.len() == 1 {
                    alt_arg(&alts[0])
                } else {
                    oneof(alts, false)
                };
                a.optional = true;
                out.push(a);
            }
        }
    }
    out
}

/// Writes one command's docs map.
/// The keyword tokens of `c`'s grammar (`NX`, `COUNT` …): what a crash
/// report leaves visible with `hide-user-data-from-log` (Redis's
/// `cmdTokenGetFromCommand`).
pub(crate) fn tokens(c: &Command) -> Vec<String> {
    fn collect(args: &[Arg], out: &mut Vec<String>) {
        for a in args {
            out.extend(a.token.clone());
            collect(&a.args, out);
        }
    }
    let mut out = Vec::new();
    collect(&parse_syntax(c.syntax).unwrap_or_default(), &mut out);
    out
}

pub(crate) fn write_docs(out: &mut Reply, c: &Command, parent: Option<&Command>) {
    let args = parse_syntax(c.syntax).unwrap_or_default();
    let has_args = !args.is_empty();
    let has_subs = !c.subcommands.is_empty();
    out.map(4 + has_args as usize + has_subs as usize);
    out.bulk(b"summary");
    out.bulk(c.summary.as_bytes());
    out.bulk(b"since");
    out.bulk(c.since.as_bytes());
    out.bulk(b"group");
    out.bulk(parent.map_or(c.group, |p| p.group).as_bytes());
    out.bulk(b"complexity");
    out.bulk(c.complexity.as_bytes());
    if has_args {
        out.bulk(b"arguments");
        write_args(out, &args);
    }
    if has_subs {
        out.bulk(b"subcommands");
        out.map(c.subcommands.len());
        for s in c.subcommands {
            out.bulk(format!("{}|{}", c.name, s.name).as_bytes());
            write_docs(out, s, Some(c));
        }
    }
}

fn write_args(out: &mut Reply, args: &[Arg]) {
    out.array(args.len());
    for a in args {
        let flags: Vec<&str> = [(a.optional, "optional"), (a.multiple, "multiple")]
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, f)| *f)
            .collect();
        let n = 2
            + a.token.is_some() as usize
            + !flags.is_empty() as usize
            + !a.args.is_empty() as usize;
        out.map(n);
        out.bulk(b"name");
        out.bulk(a.name.as_bytes());
        out.bulk(b"type");
        out.bulk(a.kind.as_bytes());
        if let Some(t) = &a.token {
            out.bulk(b"token");
            out.bulk(t.as_bytes());
        }
        if !flags.is_empty() {
            out.bulk(b"flags");
            out.array(flags.len());
            for f in flags {
                out.simple(f);
            }
        }
        if !a.args.is_empty() {
            out.bulk(b"arguments");
            write_args(out, &a.args);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_the_grammar_keywords() {
        crate::commands::install();
        let set = crate::spec::lookup(b"set").unwrap();
        let t = tokens(set);
        for k in ["NX", "XX", "GET", "EX", "PX", "KEEPTTL"] {
            assert!(t.iter().any(|x| x == k), "{k} not in {t:?}");
        }
        assert!(!t.iter().any(|x| x == "key" || x == "value"), "{t:?}");
        assert!(tokens(crate::spec::lookup(b"debug").unwrap()).is_empty());
    }

    #[test]
    fn repetition_and_options() {
        let args = parse_syntax("key [key ...]").unwrap();
        assert_eq!(args.len(), 1);
        assert!(args[0].multiple && args[0].kind == "key");

        let args =
            parse_syntax("key value [NX | XX] [GET] [EX seconds | PX milliseconds | KEEPTTL]")
                .unwrap();
        assert_eq!(args.len(), 5);
        assert_eq!(args[2].kind, "oneof");
        assert!(args[2].optional);
        assert_eq!(args[3].token.as_deref(), Some("GET"));
        assert_eq!(args[4].args[0].token.as_deref(), Some("EX"));
        assert_eq!(args[4].args[0].kind, "integer");

        let args = parse_syntax("key score member [score member ...]").unwrap();
        assert_eq!(args.len(), 2);
        assert_eq!(args[1].kind, "block");
        assert!(args[1].multiple);

        let args = parse_syntax("[LIMIT offset count]").unwrap();
        assert_eq!(args[0].kind, "block");
        assert_eq!(args[0].token.as_deref(), Some("LIMIT"));
    }

    #[test]
    fn malformed_grammar_is_an_error() {
        assert!(parse_syntax("[key").is_err());
        assert!(parse_syntax("key ]").is_err());
    }
}
