//! The checked-in header `include/hwwfc.h` is what cbindgen makes of
//! `src/lib.rs` now. `HWWFC_BLESS=1 cargo test -p hwwfc-capi --test header`
//! rewrites it.

use std::path::Path;

fn generate() -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen generates the header");
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("UTF-8 header")
}

#[test]
fn the_checked_in_header_is_up_to_date() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("include/hwwfc.h");
    let fresh = generate();
    if std::env::var_os("HWWFC_BLESS").is_some() {
        std::fs::write(&path, &fresh).expect("write the header");
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == fresh,
        "capi/include/hwwfc.h is stale: run `HWWFC_BLESS=1 cargo test -p hwwfc-capi --test header` and commit it"
    );
}
