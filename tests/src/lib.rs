//! Cross-crate tests of HW-WFC live in `tests/tests/`; this library holds
//! what they share.

/// Path of the repository root.
pub fn repo_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(|p| p.to_path_buf()).unwrap_or_default()
}
