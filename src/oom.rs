//! The process's Linux OOM-killer score (`/proc/self/oom_score_adj`), set
//! from `oom-score-adj` and `oom-score-adj-values` as Redis's
//! `setOOMScoreAdj` sets it.
//!
//! Redis remembers the score the process had before it first adjusted it
//! (the base), so that `relative` adds to it and turning the setting off
//! puts it back. The third value is a background job's child's (see
//! [`OomScore::child_value`]), which the child sets itself.

use std::sync::Mutex;

/// Where the score lives; a test points it elsewhere.
const PROC_FILE: &str = "/proc/self/oom_score_adj";

/// How `oom-score-adj` asks the score to be set.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Mode {
    /// `no`: leave it (and restore the base if zwindow changed it).
    Off,
    /// `yes` / `relative`: the base plus the class's value.
    Relative,
    /// `absolute`: the class's value.
    Absolute,
}

impl Mode {
    /// The mode a `oom-score-adj` value names (unknown names: off; the
    /// config check refuses them first).
    pub(crate) fn parse(value: &str) -> Mode {
        match value {
            "yes" | "relative" => Mode::Relative,
            "absolute" => Mode::Absolute,
            _ => Mode::Off,
        }
    }
}

/// The score zwindow manages; `base` is Some while zwindow has adjusted it.
pub(crate) struct OomScore {
    path: &'static str,
    base: Mutex<Option<i64>>,
}

impl Default for OomScore {
    fn default() -> Self {
        OomScore {
            path: PROC_FILE,
            base: Mutex::new(None),
        }
    }
}

impl OomScore {
    /// Sets the score for a primary (`replica` false) or a replica from
    /// `values` (primary, replica, background child). Fails (and logs why,
    /// as Redis does) when the file cannot be read or written.
    pub(crate) fn apply(&self, mode: Mode, values: [i64; 3], replica: bool) -> Result<(), ()> {
        let mut base = self.base.lock().unwrap_or_else(|e| e.into_inner());
        let val = if mode != Mode::Off {
            let b = match *base {
                Some(b) => b,
                None => {
                    let read = std::fs::read_to_string(self.path).map_err(|e| {
                        tracing::warn!(
                            "Unable to read oom_score_adj: {}",
                            crate::util::strerror(&e)
                        );
                    })?;
                    // `atoi`: a number, or 0.
                    let b = read.trim().parse().unwrap_or(0);
                    *base = Some(b);
                    b
                }
            };
            let own = values[usize::from(replica)];
            let val = if mode == Mode::Relative { own + b } else { own };
            val.clamp(-1000, 1000)
        } else if let Some(b) = base.take() {
            b
        } else {
            return Ok(());
        };
        std::fs::write(self.path, format!("{val}\n")).map_err(|e| {
            tracing::warn!(
                "Unable to write oom_score_adj: {}",
                crate::util::strerror(&e)
            );
        })
    }
}

impl OomScore {
    /// The score a background job's child sets for itself (Redis's
    /// `setOOMScoreAdj(CONFIG_OOM_BGCHILD)` in the child): None when
    /// `oom-score-adj` is off or the base cannot be read.
    pub(crate) fn child_value(&self, mode: Mode, values: [i64; 3]) -> Option<i64> {
        if mode == Mode::Off {
            return None;
        }
        let base = *self.base.lock().unwrap_or_else(|e| e.into_inner());
        let b = match base {
            Some(b) => b,
            None => std::fs::read_to_string(self.path)
                .ok()?
                .trim()
                .parse()
                .unwrap_or(0),
        };
        let val = if mode == Mode::Relative {
            values[2] + b
        } else {
            values[2]
        };
        Some(val.clamp(-1000, 1000))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn score_in(dir: &std::path::Path, start: &str) -> OomScore {
        let path = dir.join("oom_score_adj");
        std::fs::write(&path, start).unwrap();
        OomScore {
            path: Box::leak(path.to_string_lossy().into_owned().into_boxed_str()),
            base: Mutex::new(None),
        }
    }

    fn read(s: &OomScore) -> String {
        std::fs::read_to_string(s.path).unwrap()
    }

    #[test]
    fn relative_absolute_and_restore() {
        let dir = std::env::temp_dir().join(format!("zwindow-oom-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let s = score_in(&dir, "22\n");
        // Off before anything was adjusted: the file is not touched.
        s.apply(Mode::Off, [1, 2, 3], false).unwrap();
        assert_eq!(read(&s), "22\n");
        s.apply(Mode::Relative, [9, 20, 30], false).unwrap();
        assert_eq!(read(&s), "31\n");
        s.apply(Mode::Relative, [9, 20, 30], true).unwrap();
        assert_eq!(read(&s), "42\n");
        s.apply(Mode::Absolute, [9, 20, 30], false).unwrap();
        assert_eq!(read(&s), "9\n");
        s.apply(Mode::Relative, [2000, 0, 0], false).unwrap();
        assert_eq!(read(&s), "1000\n");
        s.apply(Mode::Off, [9, 20, 30], false).unwrap();
        assert_eq!(read(&s), "22\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unreadable_file_fails() {
        let s = OomScore {
            path: "/nonexistent/zwindow/oom_score_adj",
            base: Mutex::new(None),
        };
        assert!(s.apply(Mode::Relative, [0, 0, 0], false).is_err());
        assert!(s.apply(Mode::Off, [0, 0, 0], false).is_ok());
    }
}
