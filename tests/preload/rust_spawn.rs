// rust_spawn.rs - threads of Rust's std::thread::spawn running named
// functions of the program's, for their start functions in ctrace's
// outputs (tests/preload/funcnames_check.sh).
//
// Usage: run_rust_spawn
//
// fetcher runs in a thread of thread::spawn (through a closure), indexer
// in one of thread::Builder (a function item given as it is); each
// sleeps a millisecond, a wait with its own stack. Both are kept out of
// line: a function the compiler inlined into std's thread start has no
// frame of its own to name it by. A third thread runs a closure of
// main's that sleeps, which the compiler inlines: named by std's
// routine, or, with Rust's v0 mangling, by the routine's instance for
// that closure.
use std::thread;
use std::time::Duration;

#[inline(never)]
fn fetcher(n: u64) -> u64 {
    thread::sleep(Duration::from_millis(1));
    n + 1
}

// Its sleep is not its last act: a function that ends in a call leaves
// no frame of its own either (a tail call).
#[inline(never)]
fn indexer() {
    thread::sleep(Duration::from_millis(1));
    println!("indexer: slept");
}

fn main() {
    let n = std::env::args().count() as u64;
    let a = thread::spawn(move || fetcher(n));
    let b = thread::Builder::new().name("indexer".into()).spawn(indexer).unwrap();
    let c = thread::spawn(move || {
        thread::sleep(Duration::from_millis(1));
        n * 2
    });
    let got = a.join().unwrap();
    b.join().unwrap();
    let doubled = c.join().unwrap();
    println!("rust_spawn: fetched {}, doubled {}", got, doubled);
}
