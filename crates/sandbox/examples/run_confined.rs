//! Runs a command confined as a long-lived process and copies its stdout and stderr
//! to ours: `cargo run -p gauntlet-sandbox --example run_confined -- CMD ARGS…`
//! (`NETWORK=1` allows sockets). For checking by hand what a program can do inside the
//! sandbox.
use gauntlet_sandbox::{Process, Spec};
use std::io::Read;

fn main() {
    let mut args = std::env::args_os().skip(1);
    let Some(program) = args.next() else {
        eprintln!("usage: run_confined CMD ARGS…");
        std::process::exit(2);
    };
    let mut spec = Spec::new(program);
    spec.args = args.collect();
    spec.network = std::env::var_os("NETWORK").is_some();
    let mut p = Process::spawn(&spec).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2);
    });
    drop(p.stdin.take());
    let mut out = String::new();
    let _ = p.stdout.take().map(|mut o| o.read_to_string(&mut out));
    let mut err = String::new();
    let _ = p.stderr.take().map(|mut e| e.read_to_string(&mut err));
    print!("{out}");
    eprint!("{err}");
    eprintln!("ended: {:?}", p.stop(std::time::Duration::from_secs(2)));
}
