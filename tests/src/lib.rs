//! Cross-crate tests of HW-WFC live in `tests/tests/`; this library holds
//! what they share, and what `cargo xtask qemu` uses to build and run the
//! firmware ([`firmware`], [`elf`]).

pub mod elf;
pub mod firmware;

/// Path of the repository root.
pub fn repo_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(|p| p.to_path_buf()).unwrap_or_default()
}
