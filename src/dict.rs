//! Placeholder keyspace table over `HashMap`; replaced by the Redis-style
//! dict with SCAN guarantees.

use std::collections::HashMap;

pub struct Dict<K, V> {
    map: HashMap<Box<[u8]>, (K, V)>,
}

impl<K: AsRef<[u8]>, V> Default for Dict<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: AsRef<[u8]>, V> Dict<K, V> {
    pub fn new() -> Self {
        Dict {
            map: HashMap::new(),
        }
    }
    pub fn len(&self) -> usize {
        self.map.len()
    }
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    pub fn get(&self, key: &[u8]) -> Option<&V> {
        self.map.get(key).map(|(_, v)| v)
    }
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        self.map.get_mut(key).map(|(_, v)| v)
    }
    pub fn get_key_value(&self, key: &[u8]) -> Option<(&K, &V)> {
        self.map.get(key).map(|(k, v)| (k, v))
    }
    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.map.contains_key(key)
    }
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        let b: Box<[u8]> = key.as_ref().into();
        self.map.insert(b, (key, value)).map(|(_, v)| v)
    }
    pub fn remove(&mut self, key: &[u8]) -> Option<(K, V)> {
        self.map.remove(key)
    }
    pub fn clear(&mut self) {
        self.map.clear()
    }
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.map.values().map(|(k, v)| (k, v))
    }
    pub fn scan(&self, _cursor: u64, _count: usize, mut f: impl FnMut(&K, &V)) -> u64 {
        for (k, v) in self.iter() {
            f(k, v)
        }
        0
    }
    pub fn random(&self, rng: &mut impl rand::Rng) -> Option<(&K, &V)> {
        if self.map.is_empty() {
            return None;
        }
        let i = rng.random_range(0..self.map.len());
        self.iter().nth(i)
    }
    pub fn sample(&self, rng: &mut impl rand::Rng, count: usize, mut f: impl FnMut(&K, &V)) {
        for _ in 0..count {
            if let Some((k, v)) = self.random(rng) {
                f(k, v)
            }
        }
    }
}
