// rust_sync.rs - Rust's std waits, made on futexes through libc's syscall()
// (src/preload/futex.c): Mutex + Condvar, mpsc channels, thread::park.
//
// Usage: run_rust_sync ROUNDS
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

fn main() {
    let args: Vec<String> = std::env::args().collect();
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
