//! MODULE: LIST, HELP, LOAD, LOADEX and UNLOAD, for a server that loads
//! no modules.
//!
//! zwindow has no module API, so `MODULE LIST` is always empty. LOAD,
//! LOADEX and UNLOAD are Redis's protected commands: the execution layer
//! refuses them, with Redis 7.0's text, unless `enable-module-command`
//! allows the client (see [`module_command_refused`]). When allowed, LOAD
//! and LOADEX fail saying zwindow loads no modules, and UNLOAD finds no
//! module of that name, as Redis does for a name it never loaded.

use super::flags::*;
use super::{CmdResult, Command, Ctx, Done, Error, Handler, Keys};
use crate::commands::Services;

const G: &str = "server";

#[rustfmt::skip]
pub(crate) static COMMANDS: &[Command] = &[
    Command::new("module", -2, 0, Keys::None, &(super::server::container as Handler))
        .doc(G, "4.0.0", "Depends on subcommand.", "A container for module commands")
        .subcommands(MODULE),
];

#[rustfmt::skip]
static MODULE: &[Command] = &[
    Command::new("help", 2, LOADING | STALE, Keys::None, &(help as Handler))
        .doc(G, "5.0.0", "O(1)", "Show helpful text about the different subcommands"),
    Command::new("list", 2, ADMIN | NOSCRIPT, Keys::None, &(list as Handler))
        .doc(G, "4.0.0", "O(N) where N is the number of loaded modules.", "List all modules loaded by the server"),
    Command::new("load", -3, NO_ASYNC_LOADING | ADMIN | NOSCRIPT | PROTECTED, Keys::None, &(load as Handler))
        .doc(G, "4.0.0", "O(1)", "Load a module")
        .syntax("path [arg [arg ...]]"),
    Command::new("loadex", -3, NO_ASYNC_LOADING | ADMIN | NOSCRIPT | PROTECTED, Keys::None, &(load as Handler))
        .doc(G, "7.0.0", "O(1)", "Load a module with extended parameters")
        .syntax("path [CONFIG name value [CONFIG name value ...]] [ARGS arg [arg ...]]"),
    Command::new("unload", 3, NO_ASYNC_LOADING | ADMIN | NOSCRIPT | PROTECTED, Keys::None, &(unload as Handler))
        .doc(G, "4.0.0", "O(1)", "Unload a module")
        .syntax("name"),
];

/// Redis's refusal of a protected MODULE subcommand (`processCommand`,
/// right after the arity check), unless `enable-module-command` is `yes`,
/// or `local` and the client connects from the loopback address.
pub(crate) fn module_command_refused(
    shared: &Services,
    local_client: bool,
) -> Option<&'static str> {
    let allowed = match shared.config.enable_module_command().as_str() {
        "yes" => true,
        "local" => local_client,
        _ => false,
    };
    (!allowed).then_some(
        "ERR MODULE command not allowed. If the enable-module-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.",
    )
}

fn help(ctx: &mut Ctx) -> CmdResult {
    super::observability::reply_help(
        ctx,
        &[
            "LIST",
            "    Return a list of loaded modules.",
            "LOAD <path> [<arg> ...]",
            "    Load a module library from <path>, passing to it any optional arguments.",
            "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
            "    Load a module library from <path>, while passing it module configurations and optional arguments.",
            "UNLOAD <name>",
            "    Unload a module.",
        ],
    );
    Ok(Done)
}

/// MODULE LIST: no module is ever loaded.
fn list(ctx: &mut Ctx) -> CmdResult {
    ctx.out.array(0);
    Ok(Done)
}

/// MODULE LOAD / LOADEX, when `enable-module-command` lets the client run
/// them: zwindow has no module API to load a library into.
fn load(ctx: &mut Ctx) -> CmdResult {
    tracing::warn!(
        path = %String::from_utf8_lossy(ctx.arg(2)),
        "MODULE LOAD refused: zwindow does not load Redis modules"
    );
    Err(Error::Static(
        "ERR Error loading the extension: zwindow does not load Redis modules.",
    ))
}

/// MODULE UNLOAD name: no module has that name (none is loaded).
fn unload(_ctx: &mut Ctx) -> CmdResult {
    Err(Error::Static(
        "ERR Error unloading module: no such module with that name",
    ))
}
