//! Function libraries (Redis 7.0 functions) on the scripting engine: the
//! `#!lua name=…` metadata, loading a library (compile, run its top level to
//! collect `redis.register_function` calls), the library table and the
//! case-insensitive function index FCALL looks names up in.
//!
//! The Lua side (the load-time globals, `register_function`'s argument
//! checks, the shared library environment) is in `bootstrap.lua`; this file
//! owns what Redis keeps in its functions library context, so a load either
//! fully replaces the state or leaves it untouched.

use mlua::{Function, Table, Value};

use super::{Engine, FUNCTION_CHUNK};
use crate::protocol::parser::split_args;

/// The text of the error FUNCTION LOAD's timeout raises.
pub(crate) const LOAD_TIMEOUT: &str = "FUNCTION LOAD timeout";
/// How long a library's top level may run (Redis's `LOAD_TIMEOUT_MS`).
const LOAD_TIMEOUT_MS: u64 = 500;

/// `register_function` flags, in the order Redis lists them.
pub(crate) const FLAG_NAMES: [&str; 5] = [
    "no-writes",
    "allow-oom",
    "allow-stale",
    "no-cluster",
    "allow-cross-slot-keys",
];
pub(crate) const FLAG_NO_WRITES: u32 = 1;
pub(crate) const FLAG_ALLOW_OOM: u32 = 1 << 1;
pub(crate) const FLAG_ALLOW_STALE: u32 = 1 << 2;
pub(crate) const FLAG_NO_CLUSTER: u32 = 1 << 3;
pub(crate) const FLAG_ALLOW_CROSS_SLOT: u32 = 1 << 4;

pub(crate) struct FunctionDef {
    pub(crate) name: String,
    /// In the Lua registry, as a script's chunk (see `Script::func`).
    pub(crate) func: mlua::RegistryKey,
    pub(crate) description: Option<Vec<u8>>,
    pub(crate) flags: u32,
}

pub(crate) struct Library {
    pub(crate) name: String,
    pub(crate) code: Vec<u8>,
    /// Sorted by name (FUNCTION LIST's order).
    pub(crate) functions: Vec<FunctionDef>,
    /// What loading it added to the Lua heap, its share of INFO's
    /// `used_memory_vm_functions` (see [`Engine::functions_vm_bytes`]).
    vm_bytes: usize,
}

/// The shebang of a library: (library name, where the code starts). The
/// newline stays with the code so error line numbers count the shebang.
pub(crate) fn parse_metadata(code: &[u8]) -> Result<(String, usize), String> {
    if !code.starts_with(b"#!") {
        return Err("ERR Missing library metadata".into());
    }
    let Some(end) = code.iter().position(|&b| b == b'\n') else {
        return Err("ERR Invalid library metadata".into());
    };
    // Redis splits the line with sdssplitargs (quotes and escapes).
    let (mut words, mut spans) = (Vec::new(), Vec::new());
    if split_args(&code[..end], &mut words, &mut spans).is_err() || spans.is_empty() {
        return Err("ERR Invalid library metadata".into());
    }
    let parts: Vec<String> = spans
        .iter()
        .map(|&(a, b)| String::from_utf8_lossy(words.get(a..b).unwrap_or_default()).into_owned())
        .collect();
    let engine = parts[0].get(2..).unwrap_or("");
    let mut name: Option<String> = None;
    for p in &parts[1..] {
        if p.len() >= 5 && p.as_bytes()[..5].eq_ignore_ascii_case(b"name=") {
            if name.is_some() {
                return Err(
                    "ERR Invalid metadata value, name argument was given multiple times".into(),
                );
            }
            name = Some(p[5..].to_string());
            continue;
        }
        return Err(format!("ERR Invalid metadata value given: {p}"));
    }
    let Some(name) = name else {
        return Err("ERR Library name was not given".into());
    };
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(format!("ERR Engine '{engine}' not found"));
    }
    if !valid_name(&name) {
        return Err("ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long".into());
    }
    Ok((name, end))
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

impl Engine {
    /// FUNCTION LOAD: returns the library name.
    pub(crate) fn load_library(&mut self, code: &[u8], replace: bool) -> Result<String, String> {
        self.collect_now_and_then();
        let heap_before = self.lua.used_memory();
        let (name, start) = parse_metadata(code)?;
        if !replace && self.libraries.contains_key(&name) {
            return Err(format!("ERR Library '{name}' already exists"));
        }
        let chunk = self
            .compile(&code[start..], FUNCTION_CHUNK, &self.fenv)
            .map_err(|m| format!("ERR Error compiling function: {m}"))?;
        let functions = self.run_library(chunk)?;
        if functions.is_empty() {
            return Err("ERR No functions registered".into());
        }
        for f in &functions {
            if let Some(owner) = self.function_index.get(&f.name.to_ascii_lowercase())
                && owner != &name
            {
                return Err(format!("ERR Function {} already exists", f.name));
            }
        }
        self.delete_library(&name);
        for f in &functions {
            self.function_index
                .entry(f.name.to_ascii_lowercase())
                .or_insert_with(|| name.clone());
        }
        self.library_bytes += code.len() + 64;
        let vm_bytes = self.lua.used_memory().saturating_sub(heap_before);
        self.library_vm_bytes += vm_bytes;
        self.libraries.insert(
            name.clone(),
            Library {
                name: name.clone(),
                code: code.to_vec(),
                functions,
                vm_bytes,
            },
        );
        Ok(name)
    }

    /// Runs a library's top level under the load timeout.
    fn run_library(&self, chunk: Function) -> Result<Vec<FunctionDef>, String> {
        let busy = self.busy();
        busy.set_load_deadline(Some(LOAD_TIMEOUT_MS));
        let ran = self
            .load_library
            .call::<(Option<String>, Option<Table>)>(chunk);
        busy.set_load_deadline(None);
        let (err, fns) = ran.map_err(|e| format!("ERR Error registering functions: {e}"))?;
        if let Some(e) = err {
            return Err(format!("ERR Error registering functions: {e}"));
        }
        let mut out = Vec::new();
        for entry in fns.iter().flat_map(|t| t.sequence_values::<Table>()) {
            let entry = entry.map_err(|e| format!("ERR {e}"))?;
            let name: String = entry.raw_get(1).map_err(|e| format!("ERR {e}"))?;
            let func: Function = entry.raw_get(2).map_err(|e| format!("ERR {e}"))?;
            let func = self
                .lua
                .create_registry_value(func)
                .map_err(|e| format!("ERR {e}"))?;
            let flags: u32 = entry.raw_get(3).unwrap_or(0);
            let description = match entry.raw_get::<Value>(4) {
                Ok(Value::String(s)) => Some(s.as_bytes().to_vec()),
                _ => None,
            };
            out.push(FunctionDef {
                name,
                func,
                description,
                flags,
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// FUNCTION DELETE: false if there is no such library.
    pub(crate) fn delete_library(&mut self, name: &str) -> bool {
        let Some(lib) = self.libraries.remove(name) else {
            return false;
        };
        self.library_bytes -= lib.code.len() + 64;
        self.library_vm_bytes = self.library_vm_bytes.saturating_sub(lib.vm_bytes);
        for f in &lib.functions {
            let key = f.name.to_ascii_lowercase();
            if self.function_index.get(&key).is_some_and(|o| o == name) {
                self.function_index.remove(&key);
            }
        }
        true
    }

    pub(crate) fn flush_libraries(&mut self) {
        drop(self.take_libraries());
        self.lua.expire_registry_values();
        self.lua.gc_collect().ok();
    }

    /// Empties the library table, handing its libraries to the caller (to
    /// free elsewhere: FUNCTION FLUSH ASYNC). The Lua side of their
    /// functions is released as the registry slots they held are reused.
    pub(crate) fn take_libraries(&mut self) -> std::collections::BTreeMap<String, Library> {
        self.library_bytes = 0;
        self.library_vm_bytes = 0;
        self.function_index.clear();
        std::mem::take(&mut self.libraries)
    }

    /// The Lua heap the loaded libraries hold, as each load measured it:
    /// INFO's `used_memory_vm_functions`. Redis gives functions a Lua VM
    /// of their own; zwindow's libraries share the one VM with EVAL's
    /// scripts, and this is their part of it.
    pub(crate) fn functions_vm_bytes(&self) -> usize {
        self.library_vm_bytes
    }

    /// FCALL's lookup (case-insensitive, as Redis's functions dict).
    pub(crate) fn find_function(&self, name: &[u8]) -> Option<&FunctionDef> {
        let key = String::from_utf8_lossy(name).to_ascii_lowercase();
        let lib = self.libraries.get(self.function_index.get(&key)?)?;
        lib.functions
            .iter()
            .find(|f| f.name.eq_ignore_ascii_case(&key))
    }

    /// Every function name is indexed once (names are unique across
    /// libraries).
    pub(crate) fn function_count(&self) -> usize {
        self.function_index.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata() {
        assert_eq!(parse_metadata(b"#!lua name=a\nx"), Ok(("a".into(), 12)));
        assert_eq!(
            parse_metadata(b"#!LUA  NAME=b_1 \n"),
            Ok(("b_1".into(), 16))
        );
        let err = |c: &[u8]| parse_metadata(c).unwrap_err();
        assert_eq!(err(b"return 1"), "ERR Missing library metadata");
        assert_eq!(err(b"#!lua name=a"), "ERR Invalid library metadata");
        assert_eq!(err(b"#!lua\n"), "ERR Library name was not given");
        assert_eq!(
            err(b"#!lua name=a foo=b\n"),
            "ERR Invalid metadata value given: foo=b"
        );
        assert_eq!(
            err(b"#!lua name=a name=b\n"),
            "ERR Invalid metadata value, name argument was given multiple times"
        );
        assert_eq!(err(b"#!luax name=a\n"), "ERR Engine 'luax' not found");
        assert_eq!(parse_metadata(b"#!lua \"name=q\"\n"), Ok(("q".into(), 14)));
        assert_eq!(
            parse_metadata(b"#!lua name=q\"a\"\n"),
            Ok(("qa".into(), 15))
        );
        assert_eq!(err(b"#!lua name=\"q\n"), "ERR Invalid library metadata");
        assert!(err(b"#!lua name=a-b\n").starts_with("ERR Library names can only"));
    }
}
