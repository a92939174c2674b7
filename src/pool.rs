//! The solver pool: a fixed set of OS threads that run CPU work, fed from
//! one shared queue, so solving never runs on the async runtime's threads.
//! The worker and `sudokud solve` both solve on it.
//!
//! The queue itself is unbounded; its users bound it. The worker admits a
//! new job only while fewer than [`Pool::capacity`] jobs are in the pool (a
//! batch adds at most a few chunks per thread); `sudokud solve` keeps at
//! most two chunks per thread in flight.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use tracing::error;

/// A unit of CPU work. It must answer for itself: a panic that escapes it
/// is caught and logged, and the thread goes on with the next task.
pub(crate) type Task = Box<dyn FnOnce() + Send + 'static>;

/// Jobs per thread the worker lets into the pool: enough that a thread
/// finds its next job waiting, few enough that jobs wait on the broker
/// (where other workers can take them) rather than here.
pub(crate) const JOBS_PER_THREAD: usize = 4;

struct State {
    tasks: VecDeque<Task>,
    closed: bool,
}

struct Shared {
    state: Mutex<State>,
    available: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Tasks never run under the lock, so a poisoned lock only means a
        // panic in this file's few lines of queue handling; the queue is
        // still consistent (a push or a pop either happened or not).
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Where to send work; cheap to clone, usable from any thread (a batch
/// being split on a pool thread submits its other chunks through it).
#[derive(Clone)]
pub(crate) struct PoolHandle(Arc<Shared>);

impl PoolHandle {
    /// Queues `task`. After the pool is closed the task is dropped unrun.
    pub(crate) fn submit(&self, task: Task) {
        let mut state = self.0.lock();
        if state.closed {
            return;
        }
        state.tasks.push_back(task);
        drop(state);
        self.0.available.notify_one();
    }

    /// Whether tasks wait for a thread: every thread is busy, so splitting
    /// work into more tasks would not start it any sooner.
    pub(crate) fn has_waiting(&self) -> bool {
        !self.0.lock().tasks.is_empty()
    }
}

/// The threads. Dropping the pool closes it: queued tasks are dropped and
/// each thread ends after the task it is running, without being waited
/// for (a search runs to its deadline at most).
pub(crate) struct Pool {
    handle: PoolHandle,
    threads: usize,
}

impl Pool {
    pub(crate) fn start(threads: usize) -> std::io::Result<Pool> {
        let threads = threads.max(1);
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                tasks: VecDeque::new(),
                closed: false,
            }),
            available: Condvar::new(),
        });
        for n in 0..threads {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name(format!("sudokud-solver-{n}"))
                .spawn(move || work(&shared))?;
        }
        Ok(Pool {
            handle: PoolHandle(shared),
            threads,
        })
    }

    pub(crate) fn handle(&self) -> PoolHandle {
        self.handle.clone()
    }

    pub(crate) fn threads(&self) -> usize {
        self.threads
    }

    /// Most jobs the worker lets into the pool at once.
    pub(crate) fn capacity(&self) -> usize {
        self.threads * JOBS_PER_THREAD
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        let mut state = self.handle.0.lock();
        state.closed = true;
        state.tasks.clear();
        drop(state);
        self.handle.0.available.notify_all();
    }
}

fn work(shared: &Shared) {
    loop {
        let task = {
            let mut state = shared.lock();
            loop {
                if state.closed {
                    return;
                }
                if let Some(task) = state.tasks.pop_front() {
                    break task;
                }
                state = shared
                    .available
                    .wait(state)
                    .unwrap_or_else(|e| e.into_inner());
            }
        };
        if catch_unwind(AssertUnwindSafe(task)).is_err() {
            error!("a solver task panicked outside the solver; the pool goes on");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn runs_every_task_on_its_threads() {
        let pool = Pool::start(3).unwrap();
        assert_eq!(pool.capacity(), 3 * JOBS_PER_THREAD);
        let (tx, rx) = mpsc::channel();
        for i in 0..100 {
            let tx = tx.clone();
            pool.handle().submit(Box::new(move || {
                let name = std::thread::current().name().unwrap_or("").to_string();
                tx.send((i, name)).unwrap();
            }));
        }
        let mut seen: Vec<(i32, String)> = (0..100).map(|_| rx.recv().unwrap()).collect();
        seen.sort();
        assert_eq!(
            seen.iter().map(|s| s.0).collect::<Vec<_>>(),
            (0..100).collect::<Vec<_>>()
        );
        assert!(
            seen.iter()
                .all(|(_, name)| name.starts_with("sudokud-solver-"))
        );
    }

    #[test]
    fn survives_a_panicking_task() {
        let pool = Pool::start(1).unwrap();
        pool.handle().submit(Box::new(|| panic!("boom")));
        let (tx, rx) = mpsc::channel();
        pool.handle().submit(Box::new(move || tx.send(7).unwrap()));
        assert_eq!(rx.recv().unwrap(), 7);
    }

    #[test]
    fn drops_tasks_after_close() {
        let pool = Pool::start(1).unwrap();
        let handle = pool.handle();
        drop(pool);
        let (tx, rx) = mpsc::channel::<()>();
        handle.submit(Box::new(move || tx.send(()).unwrap()));
        assert!(
            rx.recv().is_err(),
            "the task was dropped, and its sender with it"
        );
    }
}
