//! Prints what the BPF side sees: the feature report, the registration of
//! each name given (default `bbr3 bbr2`), and every struct_ops map.
//!
//! ```text
//! cargo run -p bbrkit-bpf --example status -- bbr3
//! ```

use bbrkit_bpf::status;

fn main() {
    let f = bbrkit_bpf::features::detect();
    println!("kernel {}", f.kernel);
    for x in &f.features {
        let mark = if x.present { "ok  " } else { "MISS" };
        println!("{mark} {:?}: {}", x.id, x.detail);
    }
    let mut names: Vec<String> = std::env::args().skip(1).collect();
    if names.is_empty() {
        names = vec!["bbr3".into(), "bbr2".into()];
    }
    for n in &names {
        println!("{:?}", status::ca_status(n));
    }
    for m in status::ops_maps() {
        println!("struct_ops map {m:?}");
    }
}
