//! Independent tasks run in parallel and their outputs consumed in task order, while they finish.
//!
//! Workers take task numbers in increasing order; an output that finishes ahead of its turn
//! waits until every earlier one has been consumed, and a worker takes no task more than
//! `window` ahead of the next to consume, so at most `window` outputs wait at once however many
//! tasks there are. One worker (the first) consumes; the others only when the window is full or
//! every task is handed out, so that what the consumer adds to stays in one core's cache. The
//! consumer sees task 0, 1, 2, … exactly as a sequential loop would, so whatever it accumulates
//! does not depend on the thread count.
//!
//! A panic in a task (the simulator's loud assertions) stops the other workers and is re-raised
//! on the caller's thread once they have stopped: nobody waits for a task that will never end.

use rayon::prelude::*;
use std::collections::VecDeque;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::{Condvar, Mutex, MutexGuard};

struct Line<T, C> {
    /// The next task to hand out.
    next: usize,
    /// The next task to consume.
    turn: usize,
    /// Outputs that finished ahead of their turn: slot i holds task `turn + i`'s, once done
    /// (a ring whose room stays from one task to the next, where a map made a node per task).
    waiting: VecDeque<Option<T>>,
    consume: C,
    /// The first panic's payload: every worker stops.
    failed: Option<Box<dyn std::any::Any + Send>>,
    /// Workers waiting on the condition variable: with none, nobody is woken (a wake is a
    /// system call, one per task with nobody to wake).
    sleeping: usize,
}

/// Runs `produce(0..tasks)` on the current rayon pool and calls `consume(task, output)` in task
/// order, holding at most `window` (≥ 1) outputs that finished ahead of their turn.
pub fn run_in_order<T, P, C>(tasks: usize, window: usize, produce: P, consume: C)
where
    T: Send,
    P: Fn(usize) -> T + Sync,
    C: FnMut(usize, T) + Send,
{
    let window = window.max(1);
    let line = Mutex::new(Line { next: 0, turn: 0, waiting: VecDeque::new(), consume, failed: None, sleeping: 0 });
    let moved = Condvar::new();
    let lock = || line.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let workers = rayon::current_num_threads().clamp(1, tasks.max(1));
    (0..workers).into_par_iter().with_max_len(1).for_each(|worker| loop {
        let task = {
            let mut l: MutexGuard<Line<T, C>> = lock();
            while l.failed.is_none() && l.next < tasks && l.next >= l.turn + window {
                l.sleeping += 1;
                l = moved.wait(l).unwrap_or_else(std::sync::PoisonError::into_inner);
                l.sleeping -= 1;
            }
            if l.failed.is_some() || l.next >= tasks {
                return;
            }
            l.next += 1;
            l.next - 1
        };
        let output = catch_unwind(AssertUnwindSafe(|| produce(task)));
        let mut l = lock();
        let output = match output {
            Ok(output) => output,
            Err(payload) => {
                l.failed.get_or_insert(payload);
                if l.sleeping > 0 {
                    moved.notify_all();
                }
                return;
            }
        };
        let slot = task - l.turn;
        if l.waiting.len() <= slot {
            l.waiting.resize_with(slot + 1, || None);
        }
        l.waiting[slot] = Some(output);
        let before = l.turn;
        // Worker 0 consumes, so that what the consumer adds to stays in one core's cache; the
        // others only when nobody could otherwise go on: the window is full, or every task is
        // handed out (worker 0 may have returned).
        let consumes = worker == 0 || l.next >= tasks || l.next >= l.turn + window;
        // Nothing is consumed after a panic (the ring no longer starts at `turn`).
        while consumes && l.failed.is_none() && matches!(l.waiting.front(), Some(Some(_))) {
            let turn = l.turn;
            let output = l.waiting.pop_front().flatten().expect("the front slot is filled");
            let consumed = catch_unwind(AssertUnwindSafe(|| (l.consume)(turn, output)));
            if let Err(payload) = consumed {
                l.failed.get_or_insert(payload);
                break;
            }
            l.turn += 1;
        }
        if (l.turn != before || l.failed.is_some()) && l.sleeping > 0 {
            moved.notify_all();
        }
    });
    let line = line.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(payload) = line.failed {
        resume_unwind(payload);
    }
    debug_assert!(line.waiting.iter().all(Option::is_none) && line.turn == tasks, "every output consumed");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panic's message (a `String` or a `&str` payload).
    fn message(payload: &(dyn std::any::Any + Send)) -> &str {
        payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("")
    }

    #[test]
    fn outputs_are_consumed_in_task_order_and_never_more_than_the_window_wait() {
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().expect("pool");
        let (most_ahead, started, consumed) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0));
        let mut seen = Vec::new();
        pool.install(|| {
            run_in_order(
                300,
                3,
                |task| {
                    // Tasks taken and not yet consumed, this one included.
                    let ahead = started.fetch_add(1, SeqCst) + 1 - consumed.load(SeqCst);
                    most_ahead.fetch_max(ahead, SeqCst);
                    // Uneven lengths, so later tasks often finish first.
                    std::thread::sleep(std::time::Duration::from_micros(((task * 7919) % 13) as u64 * 50));
                    task * 2
                },
                |task, output| {
                    assert_eq!(output, task * 2);
                    seen.push(task);
                    consumed.fetch_add(1, SeqCst);
                },
            )
        });
        assert_eq!(seen, (0..300).collect::<Vec<_>>());
        assert!(most_ahead.load(SeqCst) <= 3, "{} tasks ahead of the window of 3", most_ahead.load(SeqCst));
    }

    /// Rule: one worker consumes while the others can go on (what the consumer adds to stays in
    /// one core's cache: with each worker consuming the outputs it completed, two threads
    /// scaled 1.78× where the machine gives 1.9×, docs/PERFORMANCE.md); another consumes only
    /// when the window is full or every task is handed out. With a window that never fills and
    /// tasks of equal length, nearly every output is consumed on one thread (each worker
    /// consuming its own would split them about evenly).
    #[test]
    fn one_worker_consumes_while_the_others_can_go_on() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().expect("pool");
        let (tasks, mut on) = (400, Vec::new());
        pool.install(|| {
            run_in_order(
                tasks,
                tasks,
                |task| {
                    std::thread::sleep(std::time::Duration::from_micros(100));
                    task
                },
                |task, output| {
                    assert_eq!(task, output);
                    on.push(std::thread::current().id());
                },
            )
        });
        assert_eq!(on.len(), tasks);
        let most = on.iter().map(|id| on.iter().filter(|&other| other == id).count()).max().unwrap_or(0);
        assert!(most * 4 >= tasks * 3, "{most} of {tasks} outputs consumed on the busiest thread");
    }

    #[test]
    fn a_panicking_task_stops_the_others_and_reaches_the_caller() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().expect("pool");
        let caught = catch_unwind(AssertUnwindSafe(|| {
            pool.install(|| {
                run_in_order(
                    50,
                    2,
                    |task| {
                        assert!(task != 5, "task 5 fails");
                        task
                    },
                    |_, _| {},
                )
            })
        }));
        let payload = caught.expect_err("the panic reaches the caller");
        assert!(message(&*payload).contains("task 5 fails"), "{}", message(&*payload));
    }

    /// Rule: a panic in the consumer stops the run where it happened: no output is consumed
    /// after it (outputs still finishing ahead of their turn are dropped), and the panic reaches
    /// the caller.
    #[test]
    fn a_panicking_consumer_consumes_nothing_after_and_reaches_the_caller() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().expect("pool");
        for _ in 0..20 {
            let seen = Mutex::new(Vec::new());
            let caught = catch_unwind(AssertUnwindSafe(|| {
                pool.install(|| {
                    run_in_order(
                        200,
                        8,
                        |task| {
                            std::thread::sleep(std::time::Duration::from_micros(((task * 7919) % 7) as u64 * 20));
                            task
                        },
                        |task, output| {
                            seen.lock().expect("no poison").push((task, output));
                            assert!(task != 30, "consumer fails at 30");
                        },
                    )
                })
            }));
            let payload = caught.expect_err("the panic reaches the caller");
            assert!(message(&*payload).contains("consumer fails at 30"), "{}", message(&*payload));
            assert_eq!(seen.into_inner().expect("no poison"), (0..=30).map(|t| (t, t)).collect::<Vec<_>>());
        }
    }
}
