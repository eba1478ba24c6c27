//! The buffer behind `/event`: every event is kept once, shared by every subscriber, and
//! the buffer is bounded in bytes rather than in events.
//!
//! A fixed count of slots (what `tokio::sync::broadcast` offers) is wrong both ways here:
//! a `tool.settled` event carries what the model saw, from a few hundred bytes to the
//! output bound, so 4,096 slots were at once too few for a burst of small calls (a
//! subscriber a tenth of a second behind at 16,000 calls/s lost events) and too many for
//! large ones (4,096 × 50 KB held for good). Here a subscriber may fall behind by up to
//! [`Limits::event_buffer`](crate::Limits::event_buffer) bytes of events; beyond that the
//! oldest events are dropped and each subscriber that had not read them is told how many
//! it missed. Events every subscriber has read are released, and nothing is kept while
//! nobody listens.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;

/// The most events kept, whatever their size: bounds the bookkeeping of many tiny events.
const MAX_EVENTS: usize = 1 << 18;

/// Below this many bytes, events already read by everyone are not looked for: releasing
/// them costs a pass over the subscribers, which is paid once per this much.
const RELEASE_FROM: usize = 1 << 20;

/// Rough bytes an event costs beyond its text (the allocation headers and the slot).
const OVERHEAD: usize = 64;

/// One event of the stream: its type and its JSON.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) kind: String,
    pub(crate) data: String,
}

impl Entry {
    fn size(&self) -> usize {
        self.kind.len() + self.data.len() + OVERHEAD
    }
}

/// What a subscriber reads next.
#[derive(Debug)]
pub(crate) enum Next {
    /// The next event.
    Event(Arc<Entry>),
    /// This many events were dropped before the subscriber read them; it reads on from
    /// the oldest event still kept.
    Lagged(u64),
}

/// The shared buffer; [`Hub::subscribe`] to read it, [`Hub::publish`] to add to it.
#[derive(Debug)]
pub(crate) struct Hub {
    state: Mutex<State>,
    wake: Notify,
    max_bytes: usize,
    /// How many subscribers there are, readable without the lock: a publisher with
    /// nobody to tell skips building the event at all.
    subscribers: AtomicUsize,
}

#[derive(Debug)]
struct State {
    entries: VecDeque<Arc<Entry>>,
    /// The sequence number of `entries[0]`.
    first: u64,
    bytes: usize,
    /// Each subscriber's next sequence number.
    cursors: HashMap<u64, u64>,
    next_subscriber: u64,
    /// When `bytes` passes this, read events are released (amortizes the pass).
    release_at: usize,
}

impl State {
    fn end(&self) -> u64 {
        self.first + self.entries.len() as u64
    }

    fn pop(&mut self) {
        if let Some(entry) = self.entries.pop_front() {
            self.bytes -= entry.size();
            self.first += 1;
        }
    }
}

impl Hub {
    /// A hub that lets a subscriber fall `max_bytes` behind (at least one event is
    /// always kept, however large).
    pub(crate) fn new(max_bytes: usize) -> Arc<Hub> {
        Arc::new(Hub {
            state: Mutex::new(State {
                entries: VecDeque::new(),
                first: 0,
                bytes: 0,
                cursors: HashMap::new(),
                next_subscriber: 0,
                release_at: RELEASE_FROM,
            }),
            wake: Notify::new(),
            max_bytes,
            subscribers: AtomicUsize::new(0),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state stays consistent between statements; a panic elsewhere must not stop
        // the event stream.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A subscriber that reads every event published from now on.
    pub(crate) fn subscribe(self: &Arc<Hub>) -> Subscriber {
        let mut state = self.lock();
        let id = state.next_subscriber;
        state.next_subscriber += 1;
        let next = state.end();
        state.cursors.insert(id, next);
        self.subscribers.store(state.cursors.len(), Ordering::Relaxed);
        Subscriber {
            hub: Arc::clone(self),
            id,
            next,
        }
    }

    /// Whether anyone would read what is published now (a hint: a subscriber may come or
    /// go at any moment; one that comes later reads only what is published after it).
    pub(crate) fn is_listened(&self) -> bool {
        self.subscribers.load(Ordering::Relaxed) > 0
    }

    /// Adds an event for every subscriber.
    pub(crate) fn publish(&self, kind: &str, data: String) {
        {
            let mut state = self.lock();
            if state.cursors.is_empty() {
                return;
            }
            let entry = Arc::new(Entry {
                kind: kind.to_string(),
                data,
            });
            state.bytes += entry.size();
            state.entries.push_back(entry);
            if state.bytes > state.release_at.min(self.max_bytes) || state.entries.len() > MAX_EVENTS {
                self.make_room(&mut state);
            }
        }
        self.wake.notify_waiters();
    }

    fn make_room(&self, state: &mut State) {
        let read_by_all = state.cursors.values().copied().min().unwrap_or_else(|| state.end());
        while state.first < read_by_all {
            state.pop();
        }
        if state.bytes > self.max_bytes || state.entries.len() > MAX_EVENTS {
            // Someone is that far behind: drop the oldest (they are told), down to three
            // quarters so the next pass over the subscribers is a quarter of the buffer away.
            while state.entries.len() > 1
                && (state.bytes > self.max_bytes / 4 * 3 || state.entries.len() > MAX_EVENTS / 4 * 3)
            {
                state.pop();
            }
        }
        state.release_at = RELEASE_FROM.max(state.bytes.saturating_mul(2));
    }

    #[cfg(test)]
    fn kept(&self) -> (usize, usize) {
        let state = self.lock();
        (state.entries.len(), state.bytes)
    }
}

/// One reader of the hub; dropping it releases what only it had left to read.
#[derive(Debug)]
pub(crate) struct Subscriber {
    hub: Arc<Hub>,
    id: u64,
    next: u64,
}

impl Subscriber {
    /// The next event, waiting for one to be published.
    pub(crate) async fn next(&mut self) -> Next {
        let hub = Arc::clone(&self.hub);
        loop {
            let notified = hub.wake.notified();
            tokio::pin!(notified);
            // Registered before the state is read: a publish in between still wakes us.
            notified.as_mut().enable();
            if let Some(next) = self.try_next() {
                return next;
            }
            notified.await;
        }
    }

    /// The next event if one is there, without waiting.
    pub(crate) fn try_next(&mut self) -> Option<Next> {
        let mut state = self.hub.lock();
        let found = if self.next < state.first {
            let missed = state.first - self.next;
            self.next = state.first;
            Some(Next::Lagged(missed))
        } else {
            let entry = usize::try_from(self.next - state.first)
                .ok()
                .and_then(|index| state.entries.get(index).cloned());
            entry.map(|entry| {
                self.next += 1;
                Next::Event(entry)
            })
        };
        if found.is_some() {
            state.cursors.insert(self.id, self.next);
        }
        found
    }
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        let mut state = self.hub.lock();
        state.cursors.remove(&self.id);
        self.hub.subscribers.store(state.cursors.len(), Ordering::Relaxed);
        if state.cursors.is_empty() {
            let end = state.end();
            state.entries.clear();
            state.bytes = 0;
            state.first = end;
            state.release_at = RELEASE_FROM;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn event(next: Next) -> String {
        match next {
            Next::Event(entry) => entry.data.clone(),
            Next::Lagged(missed) => panic!("lagged by {missed}"),
        }
    }

    #[tokio::test]
    async fn every_subscriber_reads_every_event_in_order() {
        let hub = Hub::new(1 << 20);
        let mut a = hub.subscribe();
        let mut b = hub.subscribe();
        for n in 0..1000 {
            hub.publish("tool.settled", n.to_string());
        }
        for n in 0..1000 {
            assert_eq!(event(a.next().await), n.to_string());
        }
        for n in 0..1000 {
            assert_eq!(event(b.next().await), n.to_string());
        }
    }

    #[tokio::test]
    async fn a_subscriber_reads_only_what_was_published_after_it_came() {
        let hub = Hub::new(1 << 20);
        let _early = hub.subscribe();
        hub.publish("tool.started", "before".into());
        let mut late = hub.subscribe();
        hub.publish("tool.started", "after".into());
        assert_eq!(event(late.next().await), "after");
    }

    #[tokio::test]
    async fn a_waiting_subscriber_wakes_for_an_event_published_later() {
        let hub = Hub::new(1 << 20);
        let mut subscriber = hub.subscribe();
        let reader = tokio::spawn(async move { event(subscriber.next().await) });
        // The reader may or may not be waiting yet; it must see the event either way.
        tokio::task::yield_now().await;
        hub.publish("tool.started", "late".into());
        assert_eq!(reader.await.unwrap(), "late");
    }

    #[tokio::test]
    async fn a_subscriber_too_far_behind_is_told_exactly_how_many_it_missed() {
        // Each event costs 100 bytes of text plus its overhead; 10 fit in the budget.
        let size = 100 + "t".len() + OVERHEAD;
        let hub = Hub::new(size * 10);
        let mut slow = hub.subscribe();
        let mut fast = hub.subscribe();
        let mut missed_by_fast = 0;
        for n in 0..100 {
            hub.publish("t", format!("{n:0>100}"));
            // `fast` keeps up and never misses anything.
            match fast.next().await {
                Next::Event(entry) => assert_eq!(entry.data, format!("{n:0>100}")),
                Next::Lagged(missed) => missed_by_fast += missed,
            }
        }
        assert_eq!(missed_by_fast, 0);
        let Next::Lagged(missed) = slow.next().await else {
            panic!("the slow subscriber was not told it lagged");
        };
        // It reads on from the oldest kept event; missed + kept = everything published.
        let mut kept = 0;
        let mut last = String::new();
        while let Some(Next::Event(entry)) = slow.try_next() {
            kept += 1;
            last = entry.data.clone();
        }
        assert_eq!(missed + kept, 100, "missed {missed}, kept {kept}");
        assert!((1..=10).contains(&kept), "kept {kept}");
        assert_eq!(last, format!("{:0>100}", 99));
        let (_, bytes) = hub.kept();
        assert!(bytes <= size * 10, "{bytes} bytes kept");
    }

    #[tokio::test]
    async fn an_event_larger_than_the_budget_still_reaches_a_subscriber_that_keeps_up() {
        let hub = Hub::new(1000);
        let mut subscriber = hub.subscribe();
        hub.publish("tool.settled", "x".repeat(10_000));
        assert_eq!(event(subscriber.next().await).len(), 10_000);
    }

    #[tokio::test]
    async fn events_read_by_everyone_are_released_and_none_are_kept_without_subscribers() {
        let hub = Hub::new(64 << 20);
        let mut subscriber = hub.subscribe();
        for _ in 0..100 {
            hub.publish("tool.settled", "y".repeat(100_000));
            event(subscriber.next().await);
        }
        // 10 MB went through; what stays is below the release threshold (plus one event).
        let (_, bytes) = hub.kept();
        assert!(bytes <= RELEASE_FROM * 2 + 100_000 + OVERHEAD, "{bytes} bytes kept");
        drop(subscriber);
        assert_eq!(hub.kept(), (0, 0));
        hub.publish("tool.settled", "nobody listens".into());
        assert_eq!(hub.kept(), (0, 0));
    }

    #[test]
    fn many_publishers_and_readers_lose_nothing_within_the_budget() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        runtime.block_on(async {
            let hub = Hub::new(64 << 20);
            let readers: Vec<_> = (0..4)
                .map(|_| {
                    let mut subscriber = hub.subscribe();
                    tokio::spawn(async move {
                        let mut seen = vec![0u32; 8];
                        for _ in 0..8 * 5000 {
                            let data = event(subscriber.next().await);
                            let (publisher, n) = data.split_once(':').unwrap();
                            let publisher: usize = publisher.parse().unwrap();
                            // Each publisher's events arrive in its order, none skipped.
                            assert_eq!(n.parse::<u32>().unwrap(), seen[publisher]);
                            seen[publisher] += 1;
                        }
                        seen
                    })
                })
                .collect();
            let publishers: Vec<_> = (0..8)
                .map(|publisher| {
                    let hub = Arc::clone(&hub);
                    std::thread::spawn(move || {
                        for n in 0..5000 {
                            hub.publish("tool.settled", format!("{publisher}:{n}"));
                        }
                    })
                })
                .collect();
            for publisher in publishers {
                publisher.join().unwrap();
            }
            for reader in readers {
                assert_eq!(reader.await.unwrap(), vec![5000; 8]);
            }
        });
    }
}
