// rust_sync.rs - Rust's std waits, made on futexes through libc's syscall()
// (src/preload/futex.c): Mutex + Condvar, mpsc channels, thread::park.
//
// Usage: run_rust_sync ROUNDS | pingpong ROUNDS
//
// pingpong (bench/bench_run.sh): two threads hand a turn back and forth
// ROUNDS times under a Mutex and Condvar, as run_pingpong does with
// pthreads; prints "rust-pingpong rounds=N ns=T cpu_ns=C" (wall time and
// the process's CPU time).
//
// Three threads pass a token round ROUNDS times under a Mutex, waiting on
// a Condvar; the holder keeps the token until the kernel says both others
// sleep in a futex wait (a fixed hold is outlasted by a loaded machine's
// scheduling), so that the next holder's wait, at least, slept; a
// producer sends ROUNDS messages a millisecond apart to a receiver; a
// thread parks until main unparks it. Prints what it did.
use std::sync::mpsc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Barrier, Condvar, Mutex};
use std::thread;
use std::time::Duration;

const THREADS: usize = 3;

#[repr(C)]
struct Timespec {
    sec: i64,
    nsec: i64,
}

extern "C" {
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
    fn gettid() -> i32;
}

// SYS_futex, the first field of /proc/self/task/TID/syscall in a futex wait.
#[cfg(target_arch = "x86_64")]
const SYS_FUTEX: i64 = 202;
#[cfg(target_arch = "aarch64")]
const SYS_FUTEX: i64 = 98;

// Whether thread tid sleeps in a futex wait (state S, in the futex call)
// or has ended (a ring thread past its last round).
fn asleep_in_futex(tid: i32) -> bool {
    let stat = match std::fs::read_to_string(format!("/proc/self/task/{}/stat", tid)) {
        Ok(s) => s,
        Err(_) => return true,
    };
    // The state follows the command's closing parenthesis (it may hold spaces).
    let sleeping = stat.rfind(')').map_or(false, |i| stat[i + 1..].starts_with(" S"));
    sleeping
        && std::fs::read_to_string(format!("/proc/self/task/{}/syscall", tid))
            .ok()
            .and_then(|s| s.split_whitespace().next().and_then(|n| n.parse::<i64>().ok()))
            == Some(SYS_FUTEX)
}

// Waits (ten seconds at most: a hang would hide what went wrong) until
// every thread in tids but me sleeps in a futex wait or has ended.
fn others_asleep(tids: &[i32], me: i32) {
    for &t in tids.iter().filter(|&&t| t != me) {
        for _ in 0..100_000 {
            if asleep_in_futex(t) {
                break;
            }
            thread::sleep(Duration::from_micros(100));
        }
    }
}

fn clock_ns(clock: i32) -> i64 {
    let mut ts = Timespec { sec: 0, nsec: 0 };
    unsafe { clock_gettime(clock, &mut ts) };
    ts.sec * 1_000_000_000 + ts.nsec
}

const CLOCK_MONOTONIC: i32 = 1;
const CLOCK_PROCESS_CPUTIME_ID: i32 = 2;

fn pingpong(rounds: usize) {
    let turn = Arc::new((Mutex::new(0usize), Condvar::new()));
    let (t0, c0) = (clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_PROCESS_CPUTIME_ID));
    let other = {
        let turn = Arc::clone(&turn);
        thread::spawn(move || {
            let (lock, cv) = &*turn;
            for _ in 0..rounds {
                let mut t = lock.lock().unwrap();
                while *t != 1 {
                    t = cv.wait(t).unwrap();
                }
                *t = 0;
                cv.notify_one();
            }
        })
    };
    let (lock, cv) = &*turn;
    for _ in 0..rounds {
        let mut t = lock.lock().unwrap();
        *t = 1;
        cv.notify_one();
        while *t != 0 {
            t = cv.wait(t).unwrap();
        }
    }
    other.join().unwrap();
    let (t1, c1) = (clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_PROCESS_CPUTIME_ID));
    println!("rust-pingpong rounds={} ns={} cpu_ns={}", rounds, t1 - t0, c1 - c0);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 3 && args[1] == "pingpong" {
        if let Ok(n) = args[2].parse() {
            return pingpong(n);
        }
    }
    let rounds: usize = match args.get(1).and_then(|a| a.parse().ok()) {
        Some(n) if args.len() == 2 && n > 0 => n,
        _ => {
            eprintln!("usage: {} ROUNDS", args[0]);
            std::process::exit(2);
        }
    };

    let token = Arc::new((Mutex::new(0usize), Condvar::new()));
    // The ring's thread ids, known to all before the first round.
    let tids: Arc<Vec<AtomicI32>> = Arc::new((0..THREADS).map(|_| AtomicI32::new(0)).collect());
    let start = Arc::new(Barrier::new(THREADS));
    let ring: Vec<_> = (0..THREADS)
        .map(|me| {
            let token = Arc::clone(&token);
            let (tids, start) = (Arc::clone(&tids), Arc::clone(&start));
            thread::Builder::new()
                .name(format!("ring-{}", me))
                .spawn(move || {
                    let my_tid = unsafe { gettid() };
                    tids[me].store(my_tid, Ordering::SeqCst);
                    start.wait();
                    let all: Vec<i32> = tids.iter().map(|t| t.load(Ordering::SeqCst)).collect();
                    let (lock, cv) = &*token;
                    for _ in 0..rounds {
                        let mut turn = lock.lock().unwrap();
                        while *turn != me {
                            turn = cv.wait(turn).unwrap();
                        }
                        others_asleep(&all, my_tid);
                        *turn = (me + 1) % THREADS;
                        cv.notify_all();
                    }
                })
                .unwrap()
        })
        .collect();
    for t in ring {
        t.join().unwrap();
    }

    let (tx, rx) = mpsc::channel();
    let producer = thread::spawn(move || {
        for i in 0..rounds {
            thread::sleep(Duration::from_millis(1));
            tx.send(i).unwrap();
        }
    });
    let received = rx.iter().count();
    producer.join().unwrap();

    let parked = thread::spawn(|| thread::park());
    thread::sleep(Duration::from_millis(50));
    parked.thread().unpark();
    parked.join().unwrap();
    println!("rust: {} rounds, {} received, unparked", rounds, received);
}
