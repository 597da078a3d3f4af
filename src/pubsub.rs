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
//! patterns never match and whose messages are `smessage`. In cluster
//! mode a shard channel lives in its hash slot: when the node stops
//! serving the slot, the channel goes and its subscribers are told
//! ([`PubSub::drop_shard_slots`]).

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::RwLock;

use crate::clients::{ClientHandle, ClientId, Push};
use crate::config::OutputLimit;
use crate::keyspace::notify;
use crate::keyspace::slots::key_hash_slot;
use crate::util::glob_match;

/// Whether a subscriber still counts: a killed client's subscriptions go
/// when its task ends, but Redis frees it (and them) before its next
/// command, so PUBLISH and every PUBSUB figure and listing leave it out
/// meanwhile (see `Clients::all`).
fn connected(c: &ClientHandle) -> bool {
    !c.killed.load(std::sync::atomic::Ordering::Relaxed)
}

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
            for c in subs.iter().filter(|c| connected(c)) {
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
            if connected(c) && glob_match(pattern, &channel, false) {
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
        let mut n = 0;
        for c in subs.iter().filter(|c| connected(c)) {
            c.push(
                Push::SMessage {
                    channel: channel.clone(),
                    payload: payload.clone(),
                },
                limit,
            );
            n += 1;
        }
        n
    }

    /// Drops the shard channels hashing to `slots`, which this node no
    /// longer serves (Redis's `removeChannelsInSlot`): each subscriber is
    /// queued a [`Push::ShardUnsubscribed`], which its connection turns
    /// into the `sunsubscribe` push once it has left its own set. Redis's
    /// order: slot by slot, a slot's channels by their bytes (its
    /// `slots_to_channels` radix tree), a channel's subscribers in the
    /// order they subscribed.
    pub(crate) fn drop_shard_slots(&self, limit: OutputLimit, slots: &[u16]) {
        if slots.is_empty() {
            return;
        }
        let mut inner = self.inner.write();
        if inner.shard_channels.is_empty() {
            return;
        }
        let mut lost = vec![false; crate::keyspace::slots::SLOTS];
        for &s in slots {
            if let Some(l) = lost.get_mut(usize::from(s)) {
                *l = true;
            }
        }
        let mut gone: Vec<(u16, Bytes)> = inner
            .shard_channels
            .keys()
            .map(|ch| (key_hash_slot(ch), ch.clone()))
            .filter(|(slot, _)| lost[usize::from(*slot)])
            .collect();
        gone.sort_unstable();
        for (_, channel) in gone {
            let Some(subs) = inner.shard_channels.remove(&channel) else {
                continue;
            };
            for c in subs {
                c.push(
                    Push::ShardUnsubscribed {
                        channel: channel.clone(),
                    },
                    limit,
                );
            }
        }
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
        // A channel whose subscribers were all killed is gone, as their
        // subscriptions are for PUBLISH and NUMSUB (see `connected`).
        map.iter()
            .filter(|(_, subs)| subs.iter().any(|c| connected(c)))
            .map(|(c, _)| c)
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
        map.get(channel)
            .map_or(0, |subs| subs.iter().filter(|c| connected(c)).count())
    }

    pub(crate) fn numpat(&self) -> usize {
        let inner = self.inner.read();
        let mut pats: Vec<&Bytes> = inner
            .patterns
            .iter()
            .filter(|(_, c)| connected(c))
            .map(|(p, _)| p)
            .collect();
        pats.sort();
        pats.dedup();
        pats.len()
    }

    /// Clients subscribed to anything: channels, patterns or shard
    /// channels (Redis's `pubsub_clients`).
    pub(crate) fn clients(&self) -> usize {
        let inner = self.inner.read();
        let subscribers = inner.channels.values().chain(inner.shard_channels.values());
        let mut ids: Vec<ClientId> = subscribers
            .flatten()
            .filter(|c| connected(c))
            .map(|c| c.id)
            .collect();
        ids.extend(
            inner
                .patterns
                .iter()
                .filter(|(_, c)| connected(c))
                .map(|(_, c)| c.id),
        );
        ids.sort_unstable();
        ids.dedup();
        ids.len()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::Clients;

    #[test]
    fn a_lost_slot_drops_its_shard_channels_in_redis_order() {
        let clients = Clients::default();
        let (a, mut rx_a) = clients.register("a".into(), "l".into(), 1, false, false);
        let (b, mut rx_b) = clients.register("b".into(), "l".into(), 2, false, false);
        let hub = PubSub::default();
        // {x}1 and {x}2 share a slot; `other` is elsewhere; a plain channel
        // of the slot's name is not a shard channel.
        let slot = key_hash_slot(b"x");
        assert_ne!(key_hash_slot(b"other"), slot);
        for ch in [&b"{x}2"[..], b"{x}1", b"other"] {
            hub.subscribe(true, ch, &a);
        }
        hub.subscribe(true, b"{x}1", &b);
        hub.subscribe(false, b"{x}1", &b);
        let none = OutputLimit {
            hard: 0,
            soft: 0,
            soft_secs: 0,
        };
        hub.drop_shard_slots(none, &[slot]);
        let dropped = |rx: &mut tokio::sync::mpsc::UnboundedReceiver<Push>| {
            let mut v = Vec::new();
            while let Ok(Push::ShardUnsubscribed { channel }) = rx.try_recv() {
                v.push(channel);
            }
            v
        };
        assert_eq!(dropped(&mut rx_a), vec![&b"{x}1"[..], b"{x}2"]);
        assert_eq!(dropped(&mut rx_b), vec![&b"{x}1"[..]]);
        assert_eq!(hub.channels(true, None), vec![&b"other"[..]]);
        assert_eq!(hub.numsub(false, b"{x}1"), 1);
    }
}
