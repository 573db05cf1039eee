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
// a Condvar, each holding the token a millisecond (the others wait); a
// producer sends ROUNDS messages a millisecond apart to a receiver; a
// thread parks until main unparks it. Prints what it did.
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
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
    let ring: Vec<_> = (0..THREADS)
        .map(|me| {
            let token = Arc::clone(&token);
            thread::Builder::new()
                .name(format!("ring-{}", me))
                .spawn(move || {
                    let (lock, cv) = &*token;
                    for _ in 0..rounds {
                        let mut turn = lock.lock().unwrap();
                        while *turn != me {
                            turn = cv.wait(turn).unwrap();
                        }
                        thread::sleep(Duration::from_millis(1));
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
