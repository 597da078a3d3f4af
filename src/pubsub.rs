//! The pub/sub hub: who listens to which channel or pattern.
//!
//! Publishing looks subscribers up under a read lock and queues the message
//! on each subscriber's connection without waiting for it, so a slow
//! subscriber never stalls a publisher. The queue is bounded by Redis's
//! `client-output-buffer-limit pubsub`: a push that takes a subscriber past
//! it disconnects that subscriber (see `ClientHandle::push`). Keyspace notifications are ordinary publications on
//! `__keyspace@<db>__:<key>` and `__keyevent@<db>__:<event>`.
//!
//! Shard channels (SSUBSCRIBE/SPUBLISH) are a separate namespace: a
//! standalone server is one shard, so they behave as plain channels that
//! patterns never match and whose messages are `smessage`.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::RwLock;

use crate::clients::{ClientHandle, ClientId, Push};
use crate::config::OutputLimit;
use crate::keyspace::notify;
use crate::util::glob_match;

#[derive(Default)]
pub(crate) struct PubSub {
    inner: RwLock<Inner>,
}

#[derive(Default)]
struct Inner {
    channels: HashMap<Bytes, Vec<Arc<ClientHandle>>>,
    patterns: Vec<(Bytes, Arc<ClientHandle>)>,
    shard_channels: HashMap<Bytes, Vec<Arc<ClientHandle>>>,
}

impl Inner {
    fn map(&mut self, shard: bool) -> &mut HashMap<Bytes, Vec<Arc<ClientHandle>>> {
        if shard {
            &mut self.shard_channels
        } else {
            &mut self.channels
        }
    }
}

impl PubSub {
    /// Subscribes to a channel (a shard channel when `shard`); false if the
    /// client already was.
    pub(crate) fn subscribe(
        &self,
        shard: bool,
        channel: &[u8],
        client: &Arc<ClientHandle>,
    ) -> bool {
        let mut inner = self.inner.write();
        let subs = inner
            .map(shard)
            .entry(Bytes::copy_from_slice(channel))
            .or_default();
        if subs.iter().any(|c| c.id == client.id) {
            return false;
        }
        subs.push(client.clone());
        true
    }

    /// Unsubscribes; false if the client was not subscribed.
    pub(crate) fn unsubscribe(&self, shard: bool, channel: &[u8], id: ClientId) -> bool {
        let mut inner = self.inner.write();
        let map = inner.map(shard);
        let Some(subs) = map.get_mut(channel) else {
            return false;
        };
        let before = subs.len();
        subs.retain(|c| c.id != id);
        let removed = subs.len() != before;
        if subs.is_empty() {
            map.remove(channel);
        }
        removed
    }

    /// The channels (shard channels included) and patterns a client is
    /// subscribed to (a scan: for ACL changes, not for publishing).
    pub(crate) fn subscriptions_of(&self, id: ClientId) -> (Vec<Bytes>, Vec<Bytes>) {
        let inner = self.inner.read();
        let channels = inner
            .channels
            .iter()
            .chain(inner.shard_channels.iter())
            .filter(|(_, subs)| subs.iter().any(|c| c.id == id))
            .map(|(ch, _)| ch.clone())
            .collect();
        let patterns = inner
            .patterns
            .iter()
            .filter(|(_, c)| c.id == id)
            .map(|(p, _)| p.clone())
            .collect();
        (channels, patterns)
    }

    pub(crate) fn psubscribe(&self, pattern: &[u8], client: &Arc<ClientHandle>) -> bool {
        let mut inner = self.inner.write();
        if inner
            .patterns
            .iter()
            .any(|(p, c)| c.id == client.id && p == pattern)
        {
            return false;
        }
        inner
            .patterns
            .push((Bytes::copy_from_slice(pattern), client.clone()));
        true
    }

    pub(crate) fn punsubscribe(&self, pattern: &[u8], id: ClientId) -> bool {
        let mut inner = self.inner.write();
        let before = inner.patterns.len();
        inner
            .patterns
            .retain(|(p, c)| !(c.id == id && p == pattern));
        inner.patterns.len() != before
    }

    /// Delivers `payload` to every subscriber; returns how many received it.
    /// Subscribers past the pubsub output `limit` are disconnected instead.
    pub(crate) fn publish(&self, limit: OutputLimit, channel: &[u8], payload: &[u8]) -> usize {
        let inner = self.inner.read();
        if inner.channels.is_empty() && inner.patterns.is_empty() {
            return 0;
        }
        let channel = Bytes::copy_from_slice(channel);
        let payload = Bytes::copy_from_slice(payload);
        let mut n = 0;
        if let Some(subs) = inner.channels.get(&channel) {
            for c in subs {
                c.push(
                    Push::Message {
                        channel: channel.clone(),
                        payload: payload.clone(),
                    },
                    limit,
                );
                n += 1;
            }
        }
        for (pattern, c) in &inner.patterns {
            if glob_match(pattern, &channel, false) {
                c.push(
                    Push::PMessage {
                        pattern: pattern.clone(),
                        channel: channel.clone(),
                        payload: payload.clone(),
                    },
                    limit,
                );
                n += 1;
            }
        }
        n
    }

    /// SPUBLISH: delivers `payload` as an `smessage` to the shard channel's
    /// subscribers (patterns do not see shard channels); returns how many.
    pub(crate) fn spublish(&self, limit: OutputLimit, channel: &[u8], payload: &[u8]) -> usize {
        let inner = self.inner.read();
        let Some(subs) = inner.shard_channels.get(channel) else {
            return 0;
        };
        let channel = Bytes::copy_from_slice(channel);
        let payload = Bytes::copy_from_slice(payload);
        for c in subs {
            c.push(
                Push::SMessage {
                    channel: channel.clone(),
                    payload: payload.clone(),
                },
                limit,
            );
        }
        subs.len()
    }

    /// Publishes a keyspace notification on the channels `flags` enable.
    pub(crate) fn notify_keyspace(
        &self,
        limit: OutputLimit,
        flags: u32,
        db: usize,
        event: &str,
        key: &[u8],
    ) {
        if flags & notify::KEYSPACE != 0 {
            let mut ch = format!("__keyspace@{db}__:").into_bytes();
            ch.extend_from_slice(key);
            self.publish(limit, &ch, event.as_bytes());
        }
        if flags & notify::KEYEVENT != 0 {
            let ch = format!("__keyevent@{db}__:{event}");
            self.publish(limit, ch.as_bytes(), key);
        }
    }

    /// Channels (shard channels when `shard`) with at least one subscriber,
    /// optionally matching a pattern.
    pub(crate) fn channels(&self, shard: bool, pattern: Option<&[u8]>) -> Vec<Bytes> {
        let inner = self.inner.read();
        let map = if shard {
            &inner.shard_channels
        } else {
            &inner.channels
        };
        map.keys()
            .filter(|c| pattern.is_none_or(|p| glob_match(p, c, false)))
            .cloned()
            .collect()
    }

    pub(crate) fn numsub(&self, shard: bool, channel: &[u8]) -> usize {
        let inner = self.inner.read();
        let map = if shard {
            &inner.shard_channels
        } else {
            &inner.channels
        };
        map.get(channel).map_or(0, Vec::len)
    }

    pub(crate) fn numpat(&self) -> usize {
        let inner = self.inner.read();
        let mut pats: Vec<&Bytes> = inner.patterns.iter().map(|(p, _)| p).collect();
        pats.sort();
        pats.dedup();
        pats.len()
    }

    /// Drops every subscription of a disconnecting client.
    pub(crate) fn remove_client(&self, id: ClientId) {
        let mut guard = self.inner.write();
        let inner = &mut *guard;
        for map in [&mut inner.channels, &mut inner.shard_channels] {
            map.retain(|_, subs| {
                subs.retain(|c| c.id != id);
                !subs.is_empty()
            });
        }
        inner.patterns.retain(|(_, c)| c.id != id);
    }
}
