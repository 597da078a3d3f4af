//! A request's arguments as handlers read them: [`Args`], a view of the
//! parsed [`Request`] in the read buffer, and [`OwnedArgs`], a copy kept
//! beyond it (a MULTI queue, a blocked command). Bytes only: which
//! command they name is the command table's business.

use super::Request;

/// A request's arguments; `args[0]` is the command name.
#[derive(Clone, Copy)]
pub(crate) struct Args<'a> {
    req: Request<'a>,
}

impl<'a> Args<'a> {
    pub(crate) fn new(req: Request<'a>) -> Args<'a> {
        Args { req }
    }

    pub(crate) fn len(&self) -> usize {
        self.req.len()
    }

    /// The `i`th argument; empty if out of range (arity checks make that a
    /// bug, but never a crash).
    pub(crate) fn get(&self, i: usize) -> &'a [u8] {
        self.req.get(i).unwrap_or(&[])
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    pub(crate) fn to_owned(self) -> OwnedArgs {
        let mut data = Vec::new();
        let mut spans = Vec::with_capacity(self.len());
        for a in self.iter() {
            spans.push((data.len(), data.len() + a.len()));
            data.extend_from_slice(a);
        }
        OwnedArgs { data, spans }
    }
}

impl std::ops::Index<usize> for Args<'_> {
    type Output = [u8];
    fn index(&self, i: usize) -> &[u8] {
        self.get(i)
    }
}

/// Arguments kept beyond the read buffer (MULTI queue, blocked commands).
#[derive(Debug, Clone, Default)]
pub(crate) struct OwnedArgs {
    data: Vec<u8>,
    spans: Vec<(usize, usize)>,
}

impl OwnedArgs {
    pub(crate) fn from_slices(parts: &[&[u8]]) -> OwnedArgs {
        let mut data = Vec::new();
        let mut spans = Vec::new();
        for a in parts {
            spans.push((data.len(), data.len() + a.len()));
            data.extend_from_slice(a);
        }
        OwnedArgs { data, spans }
    }

    pub(crate) fn args(&self) -> Args<'_> {
        Args::new(Request {
            data: &self.data,
            spans: &self.spans,
        })
    }
}
