//! Which commands `CLIENT PAUSE … WRITE` holds: the execution layer's half
//! of CLIENT PAUSE (the pause's state and its wait are [`crate::pause`]).

use crate::commands::{Args, Command, flags, lookup, resolve};

/// Whether a request is held by `CLIENT PAUSE … WRITE`: it may change the
/// dataset or replicate. `script_writes` says whether the EVAL/EVALSHA or
/// FCALL it names may write (not flagged `no-writes`).
pub(crate) fn may_replicate(
    args: &Args<'_>,
    queue: Option<&[crate::commands::OwnedArgs]>,
    script_writes: &dyn Fn(&Command, &Args<'_>) -> bool,
) -> bool {
    let Ok(cmd) = resolve(args) else {
        return false;
    };
    let one = |cmd: &Command, args: &Args<'_>| {
        if is_script(cmd) {
            return script_writes(cmd, args);
        }
        cmd.has(flags::WRITE) || cmd.has(flags::MAY_REPLICATE)
    };
    if cmd.name == "exec" {
        return queue.is_some_and(|q| {
            q.iter().any(|a| {
                let a = a.args();
                lookup(a.get(0)).is_some() && resolve(&a).is_ok_and(|c| one(c, &a))
            })
        });
    }
    one(cmd, args)
}

fn is_script(cmd: &Command) -> bool {
    matches!(cmd.name, "eval" | "evalsha" | "fcall")
}
