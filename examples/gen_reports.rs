//! Writes large generated reports for the parser comparison in
//! `benches/parsers_vs_python.sh`: `cargo run --release --example gen_reports -- OUT_DIR`
//! writes `OUT_DIR/big.lcov` (about 100 MB) and `OUT_DIR/big-junit.xml` (100,000 testcases).

use std::path::PathBuf;

#[path = "../benches/support/report_gen.rs"]
mod report_gen;

fn main() -> std::io::Result<()> {
    let out = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| ".".to_string()));
    std::fs::create_dir_all(&out)?;
    std::fs::write(out.join("big.lcov"), report_gen::lcov(100 * 1024 * 1024))?;
    std::fs::write(out.join("big-junit.xml"), report_gen::junit(100_000))?;
    println!(
        "wrote {}/big.lcov and {}/big-junit.xml",
        out.display(),
        out.display()
    );
    Ok(())
}
