//! Open connections before they are calls: how many there may be, and which gives way.
//!
//! Every accepted connection holds a slot until it closes or upgrades to a call (calls are
//! bounded by `max_sessions` instead). When all `max_connections` slots are held, the
//! *oldest* connection that is not a call is closed to make room for the new one, as nginx
//! does with idle keep-alive connections when it runs out of `worker_connections`. A client
//! without credentials can hold a slot only by sending its headers slowly or by idling
//! between requests, so it is always the oldest; the platform's upgrade sends its headers
//! at once and is a call a moment later. Probes, scrapes and slow clients therefore never
//! starve calls, and the memory connections can take stays bounded by the slots (each
//! request's buffer is capped: `server::MAX_REQUEST_BUFFER`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::task::AbortHandle;

/// The open connections that are not calls, oldest first (ids grow with each accept).
pub struct Connections {
    max: usize,
    open: Mutex<Open>,
}

#[derive(Default)]
struct Open {
    next: u64,
    /// A connection's task, once spawned (`None` while it is being spawned).
    tasks: BTreeMap<u64, Option<AbortHandle>>,
}

/// One connection's slot: freed when dropped (the connection closed) or when its request
/// upgrades to a call ([`Handle::upgraded`]).
pub struct Slot {
    handle: Handle,
}

/// What a request on the connection needs to say it became a call.
#[derive(Clone)]
pub struct Handle {
    id: u64,
    connections: Arc<Connections>,
}

/// The outcome of [`Connections::admit`].
pub enum Admitted {
    /// A slot was free.
    Free(Slot),
    /// The oldest connection that is not a call was closed for this one.
    Evicted(Slot),
    /// Every slot is held by a connection still being set up: the new one is refused.
    Full,
}

impl Connections {
    pub fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            max,
            open: Mutex::new(Open::default()),
        })
    }

    /// A slot for a new connection, closing the oldest one that is not a call if all are
    /// held. Register the connection's task with [`Connections::spawned`].
    pub fn admit(self: &Arc<Self>) -> Admitted {
        let mut open = self.lock();
        let mut evicted = false;
        if open.tasks.len() >= self.max {
            let oldest = open
                .tasks
                .iter()
                .find_map(|(&id, task)| task.as_ref().map(|_| id));
            match oldest.and_then(|id| open.tasks.remove(&id).flatten()) {
                Some(task) => {
                    task.abort();
                    evicted = true;
                }
                None => return Admitted::Full,
            }
        }
        let id = open.next;
        open.next += 1;
        open.tasks.insert(id, None);
        let slot = Slot {
            handle: Handle {
                id,
                connections: self.clone(),
            },
        };
        if evicted {
            Admitted::Evicted(slot)
        } else {
            Admitted::Free(slot)
        }
    }

    /// The task serving `slot`'s connection, so that it can be closed to make room. A
    /// connection that has already closed or upgraded is not registered again.
    pub fn spawned(&self, handle: &Handle, task: AbortHandle) {
        if let Some(entry) = self.lock().tasks.get_mut(&handle.id) {
            *entry = Some(task);
        }
    }

    /// Connections holding a slot now.
    pub fn len(&self) -> usize {
        self.lock().tasks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn release(&self, id: u64) {
        self.lock().tasks.remove(&id);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        // Only plain map updates happen under the lock: a poisoned one is still consistent.
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Slot {
    pub fn handle(&self) -> Handle {
        self.handle.clone()
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.handle.connections.release(self.handle.id);
    }
}

impl Handle {
    /// The connection is a call now: it gives back its slot and can no longer be evicted.
    pub fn upgraded(&self) {
        self.connections.release(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn idle_task() -> AbortHandle {
        tokio::spawn(std::future::pending::<()>()).abort_handle()
    }

    #[tokio::test]
    async fn the_oldest_connection_gives_way_and_calls_do_not_count() {
        let connections = Connections::new(2);
        let Admitted::Free(a) = connections.admit() else {
            panic!("a slot is free")
        };
        let a_task = idle_task().await;
        connections.spawned(&a.handle(), a_task.clone());
        let Admitted::Free(b) = connections.admit() else {
            panic!("a slot is free")
        };
        connections.spawned(&b.handle(), idle_task().await);
        // Full: the oldest (a) is closed for the third.
        let Admitted::Evicted(c) = connections.admit() else {
            panic!("the oldest gives way")
        };
        tokio::task::yield_now().await;
        assert!(a_task.is_finished());
        assert_eq!(connections.len(), 2);
        // A connection that upgrades no longer holds a slot.
        b.handle().upgraded();
        assert_eq!(connections.len(), 1);
        // One still being spawned cannot be evicted: with only such left, a newcomer waits.
        let Admitted::Free(_d) = connections.admit() else {
            panic!("the upgraded one freed a slot")
        };
        assert!(matches!(connections.admit(), Admitted::Full));
        drop(c);
        assert_eq!(connections.len(), 1);
        drop(a);
        drop(b);
    }
}
